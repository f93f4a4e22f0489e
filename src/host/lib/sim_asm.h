// pmulab-sim's host-side --asm, --asm-init, --asm-late-init, --asm-one-time-init (and
// --att): assembled as run-qemu.sh assembles them, by the one assembler front end
// tools/pmulab-asm (tools/pmulab/asm.py), run as a subprocess: a command line through
// `pmulab-asm --argv WORDS`, a campaign through `pmulab-asm --campaign IN OUT`.
#pragma once

#include <string>
#include <vector>

namespace pmulab {

// Whether a command line has options that only the host assembles.
bool words_have_asm(const std::vector<std::string>& words);

// Rewrites `words` (--asm* TEXT -> --code* HEX, --att dropped, a --name from the text).
// 0 on success, else the exit status for pmulab-sim (2: bad code, whose message
// pmulab-asm printed on stderr; 2 also when tools/pmulab-asm cannot be run, said here).
int assemble_words(std::vector<std::string>* words);

// Rewrites the campaign file `path` into `*out_path` (a temporary file the caller
// removes) when it has --asm* lines; `*out_path` stays empty when it has none. Status as above.
int assemble_campaign(const std::string& path, const std::string& text, std::string* out_path);

}  // namespace pmulab

#include "sim_asm.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pmulab {

namespace {

// tools/pmulab-asm of the source tree this binary was built in: the first folder above
// the executable (build/host/pmulab-sim) that has it.
std::string find_pmulab_asm() {
    char exe[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return {};
    std::string dir(exe, size_t(n));
    for (int up = 0; up < 5; ++up) {
        size_t slash = dir.rfind('/');
        if (slash == std::string::npos || slash == 0) break;
        dir.resize(slash);
        std::string cand = dir + "/tools/pmulab-asm";
        if (::access(cand.c_str(), X_OK) == 0) return cand;
    }
    return {};
}

// Runs tools/pmulab-asm with `args`; its stdout into *out, its stderr passed through.
// Returns its exit status, or 2 after saying why it could not run.
int run_pmulab_asm(const std::vector<std::string>& args, std::string* out) {
    std::string tool = find_pmulab_asm();
    if (tool.empty()) {
        std::fprintf(stderr, "pmulab-sim: error: --asm is assembled on the host by tools/pmulab-asm, which is not in "
                             "the source tree of this pmulab-sim; give the code as --code HEX instead\n");
        return 2;
    }
    std::vector<char*> argv{const_cast<char*>(tool.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    int fds[2];
    if (::pipe(fds) != 0) return 2;
    std::fflush(stdout);
    pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(fds[1], 1);
        ::close(fds[0]);
        ::close(fds[1]);
        ::execv(tool.c_str(), argv.data());
        std::fprintf(stderr, "pmulab-sim: error: cannot run %s: %s\n", tool.c_str(), std::strerror(errno));
        ::_exit(2);
    }
    ::close(fds[1]);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) out->append(buf, size_t(n));
    ::close(fds[0]);
    int st = 0;
    if (pid < 0 || ::waitpid(pid, &st, 0) != pid) return 2;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    std::fprintf(stderr, "pmulab-sim: error: %s was stopped by signal %d\n", tool.c_str(), WTERMSIG(st));
    return 2;
}

}  // namespace

bool words_have_asm(const std::vector<std::string>& words) {
    for (const std::string& w : words)
        if (w == "--att" || w.rfind("--asm", 0) == 0) return true;
    return false;
}

int assemble_words(std::vector<std::string>* words) {
    if (!words_have_asm(*words)) return 0;
    std::vector<std::string> args{"--argv"};
    args.insert(args.end(), words->begin(), words->end());
    std::string out;
    if (int rc = run_pmulab_asm(args, &out)) return rc;
    // One word per NUL-terminated field.
    words->clear();
    size_t start = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i]) continue;
        words->push_back(out.substr(start, i - start));
        start = i + 1;
    }
    return 0;
}

int assemble_campaign(const std::string& path, const std::string& text, std::string* out_path) {
    out_path->clear();
    if (text.find("--asm") == std::string::npos && text.find("--att") == std::string::npos) return 0;
    char tmp[] = "/tmp/pmulab-sim-campaign-XXXXXX";
    int fd = ::mkstemp(tmp);
    if (fd < 0) {
        std::fprintf(stderr, "pmulab-sim: error: cannot create a temporary file: %s\n", std::strerror(errno));
        return 2;
    }
    ::close(fd);
    std::string out;
    int rc = run_pmulab_asm({"--campaign", path, tmp}, &out);
    if (rc) {
        ::unlink(tmp);
        return rc;
    }
    *out_path = tmp;
    return 0;
}

}  // namespace pmulab

#include "app/args.h"

#include "base/fmt.h"

namespace pmulab {

bool Args::at_option() const {
    if (done()) return false;
    StrView w(argv_[i_]);
    return w.starts_with("--") || w.eq("-h");
}

}  // namespace pmulab

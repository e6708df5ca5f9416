// rnn family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_rnn_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx

// training family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_training_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx

// loss family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_loss_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx

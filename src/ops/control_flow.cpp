// control_flow family schemas.
#include "ops/schema.hpp"

namespace onyx {

void register_control_flow_ops(OpRegistry& r) { (void)r; }

}  // namespace onyx

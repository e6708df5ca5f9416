// onyx: the placement table `onyx explain MODEL` prints, for any front end (the CLI, Python).
#pragma once

#include <string>

#include "onyx/session.hpp"

namespace onyx {

/// A node's op as the tables show it: "Conv", or "Conv (NHWC)" for a channels-last form.
std::string placement_op_label(const Placement::NodeInfo& node);

/// The EPs requested and what became of them, every node with its EP and who declined it, the
/// copies and the summary, as text: "model: <model>", then the tables.
std::string explain_text(const Session& session, const std::string& model);

}  // namespace onyx

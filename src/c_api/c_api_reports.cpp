// The C API's reports (include/onyx/c_api.h): inputs and outputs, placement, EP registration and
// availability.
#include "c_api/c_api_impl.hpp"

namespace onyx::capi {
namespace {

// An OnyxIoInfo is a const onyx::IoInfo of the session's, seen through the C type.
const OnyxIoInfo* io_handle(const IoInfo& info) { return reinterpret_cast<const OnyxIoInfo*>(&info); }

const IoInfo& io_info_of(const char* fn, const OnyxIoInfo* info) {
  need(fn, info, "info");
  return *reinterpret_cast<const IoInfo*>(info);
}

const IoInfo& io_at(const char* fn, const std::vector<IoInfo>& list, size_t index, const char* what) {
  if (index >= list.size())
    fail(ErrorCode::kInvalidArgument, fn, ": ", what, " index ", index, " is out of range: the model has ", list.size(), " ",
         what, "s");
  return list[index];
}

const Placement::NodeInfo& node_at(const char* fn, const OnyxPlacement* p, size_t index) {
  need(fn, p, "placement");
  const auto& nodes = p->placement.nodes;
  if (index >= nodes.size())
    fail(ErrorCode::kInvalidArgument, fn, ": node index ", index, " is out of range: the placement has ", nodes.size(), " nodes");
  return nodes[index];
}

const EpRegistration& registration_at(const char* fn, const OnyxSession* session, size_t index) {
  need(fn, session, "session");
  const auto& regs = session->session.registration();
  if (index >= regs.size())
    fail(ErrorCode::kInvalidArgument, fn, ": registration index ", index, " is out of range: the session has ", regs.size(),
         " EP requests");
  return regs[index];
}

OnyxValueKind kind_of(Value::Kind k) {
  switch (k) {
    case Value::Kind::kSequence: return ONYX_VALUE_SEQUENCE;
    case Value::Kind::kOptional: return ONYX_VALUE_OPTIONAL;
    case Value::Kind::kMap: return ONYX_VALUE_MAP;
    default: return ONYX_VALUE_TENSOR;
  }
}

}  // namespace
}  // namespace onyx::capi

using namespace onyx;
using namespace onyx::capi;

extern "C" {

// ---------------------------------------------------------------------------------------------
// Inputs and outputs

OnyxStatus* onyx_session_input_count(const OnyxSession* session, size_t* out) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, session, "session");
    need(fn, out, "out");
    *out = session->session.inputs().size();
  });
}

OnyxStatus* onyx_session_output_count(const OnyxSession* session, size_t* out) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, session, "session");
    need(fn, out, "out");
    *out = session->session.outputs().size();
  });
}

OnyxStatus* onyx_session_input_info(const OnyxSession* session, size_t index, const OnyxIoInfo** out) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, session, "session");
    need(fn, out, "out");
    *out = io_handle(io_at(fn, session->session.inputs(), index, "input"));
  });
}

OnyxStatus* onyx_session_output_info(const OnyxSession* session, size_t index, const OnyxIoInfo** out) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, session, "session");
    need(fn, out, "out");
    *out = io_handle(io_at(fn, session->session.outputs(), index, "output"));
  });
}

OnyxStatus* onyx_io_info_name(const OnyxIoInfo* info, const char** out) {
  return guarded(__func__, [&](const char* fn) {
    const IoInfo& io = io_info_of(fn, info);
    need(fn, out, "out");
    *out = io.name.c_str();
  });
}

OnyxStatus* onyx_io_info_kind(const OnyxIoInfo* info, OnyxValueKind* out) {
  return guarded(__func__, [&](const char* fn) {
    const IoInfo& io = io_info_of(fn, info);
    need(fn, out, "out");
    *out = kind_of(io.kind);
  });
}

OnyxStatus* onyx_io_info_element_type(const OnyxIoInfo* info, OnyxElementType* out) {
  return guarded(__func__, [&](const char* fn) {
    const IoInfo& io = io_info_of(fn, info);
    need(fn, out, "out");
    *out = static_cast<OnyxElementType>(static_cast<int32_t>(io.dtype));
  });
}

OnyxStatus* onyx_io_info_shape(const OnyxIoInfo* info, const int64_t** dims, int64_t* rank) {
  return guarded(__func__, [&](const char* fn) {
    const IoInfo& io = io_info_of(fn, info);
    need(fn, dims, "dims");
    need(fn, rank, "rank");
    *dims = io.has_shape ? io.shape.data() : nullptr;
    *rank = io.has_shape ? static_cast<int64_t>(io.shape.size()) : -1;
  });
}

OnyxStatus* onyx_io_info_dim_name(const OnyxIoInfo* info, size_t axis, const char** out) {
  return guarded(__func__, [&](const char* fn) {
    const IoInfo& io = io_info_of(fn, info);
    need(fn, out, "out");
    if (!io.has_shape) fail(ErrorCode::kInvalidArgument, fn, ": '", io.name, "' (", io.type_string, ") has no declared shape");
    if (axis >= io.shape.size())
      fail(ErrorCode::kInvalidArgument, fn, ": '", io.name, "' (", io.type_string, ") has rank ", io.shape.size(),
           ", so it has no dim ", axis);
    *out = axis < io.dim_names.size() ? io.dim_names[axis].c_str() : "";
  });
}

OnyxStatus* onyx_io_info_has_default(const OnyxIoInfo* info, int* out) {
  return guarded(__func__, [&](const char* fn) {
    const IoInfo& io = io_info_of(fn, info);
    need(fn, out, "out");
    *out = io.has_default ? 1 : 0;
  });
}

OnyxStatus* onyx_io_info_type_string(const OnyxIoInfo* info, const char** out) {
  return guarded(__func__, [&](const char* fn) {
    const IoInfo& io = io_info_of(fn, info);
    need(fn, out, "out");
    *out = io.type_string.c_str();
  });
}

// ---------------------------------------------------------------------------------------------
// Placement

OnyxStatus* onyx_session_placement(const OnyxSession* session, OnyxPlacement** out) {
  if (out) *out = nullptr;
  return guarded(__func__, [&](const char* fn) {
    need(fn, session, "session");
    need(fn, out, "out");
    *out = new OnyxPlacement{session->session.placement()};
  });
}

void onyx_placement_release(OnyxPlacement* placement) { delete placement; }

OnyxStatus* onyx_placement_summary(const OnyxPlacement* placement, const char** out) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, placement, "placement");
    need(fn, out, "out");
    *out = placement->placement.summary.c_str();
  });
}

OnyxStatus* onyx_placement_node_count(const OnyxPlacement* placement, size_t* out) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, placement, "placement");
    need(fn, out, "out");
    *out = placement->placement.nodes.size();
  });
}

OnyxStatus* onyx_placement_node(const OnyxPlacement* placement, size_t index, const char** name, const char** op_type,
                                const char** domain, const char** ep, const char** device, int32_t* region) {
  return guarded(__func__, [&](const char* fn) {
    const Placement::NodeInfo& n = node_at(fn, placement, index);
    put(name, n.name.c_str());
    put(op_type, n.op_type.c_str());
    put(domain, n.domain.c_str());
    put(ep, n.ep.c_str());
    put(device, n.device.c_str());
    put(region, static_cast<int32_t>(n.region));
  });
}

OnyxStatus* onyx_placement_node_decline_count(const OnyxPlacement* placement, size_t node, size_t* out) {
  return guarded(__func__, [&](const char* fn) {
    const Placement::NodeInfo& n = node_at(fn, placement, node);
    need(fn, out, "out");
    *out = n.declined.size();
  });
}

OnyxStatus* onyx_placement_node_decline(const OnyxPlacement* placement, size_t node, size_t index, const char** ep,
                                        const char** code, const char** message) {
  return guarded(__func__, [&](const char* fn) {
    const Placement::NodeInfo& n = node_at(fn, placement, node);
    if (index >= n.declined.size())
      fail(ErrorCode::kInvalidArgument, fn, ": decline index ", index, " is out of range: node '", n.name, "' has ",
           n.declined.size(), " declines");
    const Placement::Decline& d = n.declined[index];
    put(ep, d.ep.c_str());
    put(code, d.code.c_str());
    put(message, d.message.c_str());
  });
}

OnyxStatus* onyx_placement_copy_count(const OnyxPlacement* placement, size_t* out) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, placement, "placement");
    need(fn, out, "out");
    *out = placement->placement.copies.size();
  });
}

OnyxStatus* onyx_placement_copy(const OnyxPlacement* placement, size_t index, const char** value, const char** from,
                                const char** to, int64_t* bytes) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, placement, "placement");
    const auto& copies = placement->placement.copies;
    if (index >= copies.size())
      fail(ErrorCode::kInvalidArgument, fn, ": copy index ", index, " is out of range: the placement has ", copies.size(),
           " copies");
    const Placement::CopyInfo& c = copies[index];
    put(value, c.value.c_str());
    put(from, c.from.c_str());
    put(to, c.to.c_str());
    put(bytes, c.bytes);
  });
}

// ---------------------------------------------------------------------------------------------
// EP registration

OnyxStatus* onyx_session_registration_count(const OnyxSession* session, size_t* out) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, session, "session");
    need(fn, out, "out");
    *out = session->session.registration().size();
  });
}

OnyxStatus* onyx_session_registration(const OnyxSession* session, size_t index, const char** name, OnyxEpSource* source,
                                      OnyxEpOutcome* outcome, const char** reason) {
  return guarded(__func__, [&](const char* fn) {
    const EpRegistration& r = registration_at(fn, session, index);
    put(name, r.name.c_str());
    switch (r.source) {
      case EpRegistration::Source::kSession: put(source, ONYX_EP_SOURCE_SESSION); break;
      case EpRegistration::Source::kEnvironment: put(source, ONYX_EP_SOURCE_ENVIRONMENT); break;
      case EpRegistration::Source::kImplicit: put(source, ONYX_EP_SOURCE_IMPLICIT); break;
    }
    switch (r.outcome) {
      case EpRegistration::Outcome::kRegistered: put(outcome, ONYX_EP_REGISTERED); break;
      case EpRegistration::Outcome::kSkipped: put(outcome, ONYX_EP_SKIPPED); break;
      case EpRegistration::Outcome::kDuplicate: put(outcome, ONYX_EP_DUPLICATE); break;
    }
    put(reason, r.reason.c_str());
  });
}

OnyxStatus* onyx_session_registration_details(const OnyxSession* session, size_t index, int32_t* priority,
                                              const char** version, const char** device, const char** module,
                                              int* error_on_failure) {
  return guarded(__func__, [&](const char* fn) {
    const EpRegistration& r = registration_at(fn, session, index);
    put(priority, static_cast<int32_t>(r.priority));
    put(version, r.version.c_str());
    put(device, r.device.c_str());
    put(module, r.module.c_str());
    put(error_on_failure, r.error_on_failure ? 1 : 0);
  });
}

OnyxStatus* onyx_session_registration_option_count(const OnyxSession* session, size_t index, size_t* out) {
  return guarded(__func__, [&](const char* fn) {
    const EpRegistration& r = registration_at(fn, session, index);
    need(fn, out, "out");
    *out = r.options.size();
  });
}

OnyxStatus* onyx_session_registration_option(const OnyxSession* session, size_t index, size_t option, const char** key,
                                             const char** value) {
  return guarded(__func__, [&](const char* fn) {
    const EpRegistration& r = registration_at(fn, session, index);
    if (option >= r.options.size())
      fail(ErrorCode::kInvalidArgument, fn, ": option index ", option, " is out of range: '", r.name, "' has ",
           r.options.size(), " options");
    put(key, r.options[option].first.c_str());
    put(value, r.options[option].second.c_str());
  });
}

// ---------------------------------------------------------------------------------------------
// EP availability

OnyxStatus* onyx_ep_availability(const char* name, OnyxEpAvailability** out) {
  if (out) *out = nullptr;
  return guarded(__func__, [&](const char* fn) {
    need(fn, name, "name");
    need(fn, out, "out");
    *out = new OnyxEpAvailability{ep::Spec(name).availability()};
  });
}

OnyxStatus* onyx_ep_availability_get(const OnyxEpAvailability* availability, int* built, int* loadable, int* usable,
                                     const char** reason, const char** version, const char** module) {
  return guarded(__func__, [&](const char* fn) {
    need(fn, availability, "availability");
    const ep::Availability& a = availability->availability;
    put(built, a.built ? 1 : 0);
    put(loadable, a.loadable ? 1 : 0);
    put(usable, a.usable ? 1 : 0);
    put(reason, a.reason.c_str());
    put(version, a.version.c_str());
    put(module, a.module.c_str());
  });
}

void onyx_ep_availability_release(OnyxEpAvailability* availability) { delete availability; }

}  // extern "C"

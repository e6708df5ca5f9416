// onyx explain MODEL [--ep LIST] [--json | --dot]   and   onyx providers [--json]
#include <cstdio>
#include <map>

#include "cli.hpp"
#include "onyx/explain.hpp"
#include "core/common.hpp"
#include "session/session_impl.hpp"
#include "image_codecs.hpp"

namespace onyx::cli {

namespace {

const char* source_name(EpRegistration::Source s) { return registration_source_name(s).data(); }
const char* outcome_name(EpRegistration::Outcome o) { return registration_outcome_name(o).data(); }

void registration_json(Json& j, const Session& s) {
  j.key("registration").begin_array();
  for (const auto& r : s.registration()) {
    j.begin_object();
    j.key("name").value(r.name).key("source").value(source_name(r.source)).key("outcome").value(outcome_name(r.outcome));
    j.key("reason").value(r.reason).key("priority").value(r.priority).key("version").value(r.version);
    j.key("device").value(r.device).key("module").value(r.module).key("error_on_failure").value(r.error_on_failure);
    j.key("options").begin_object();
    for (const auto& [k, v] : r.options) j.key(k).value(v);
    j.end_object().end_object();
  }
  j.end_array();
}


// Graphviz colours per EP (stable by first appearance).
const char* kColours[] = {"#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5", "#d9d9d9"};

}  // namespace

int cmd_explain(const Args& a) {
  if (a.positional.size() != 1) fail(ErrorCode::kInvalidArgument, "usage: onyx explain MODEL [options] (onyx explain --help lists them)");
  const std::string& path = a.positional[0];
  Session s = builder_from(a, path).commit_from_file(path);
  const Placement p = s.placement();
  if (a.has("--json")) {
    Json j;
    j.begin_object();
    j.key("model").value(path);
    registration_json(j, s);
    j.key("nodes").begin_array();
    for (const auto& n : p.nodes) {
      j.begin_object().key("name").value(n.name).key("op_type").value(n.op_type).key("ep").value(n.ep);
      j.key("device").value(n.device).key("region").value(n.region);
      j.key("declined").begin_array();
      for (const auto& d : n.declined) j.begin_object().key("ep").value(d.ep).key("code").value(d.code).key("message").value(d.message).end_object();
      j.end_array();
      if (!n.domain.empty()) j.key("domain").value(n.domain);  // fused and channels-last ops
      j.end_object();
    }
    j.end_array();
    j.key("copies").begin_array();
    for (const auto& c : p.copies)
      j.begin_object().key("value").value(c.value).key("from").value(c.from).key("to").value(c.to).key("bytes").value(c.bytes).end_object();
    j.end_array();
    j.key("summary").value(p.summary);
    j.end_object();
    std::printf("%s\n", j.str().c_str());
    return 0;
  }
  if (a.has("--dot")) {
    std::map<std::string, const char*> colour;
    for (const auto& n : p.nodes)
      if (!colour.count(n.ep)) colour[n.ep] = kColours[colour.size() % 8];
    const auto& impl = *s.impl();
    const Graph& g = *impl.model->graph;
    std::printf("digraph onyx {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"Helvetica\"];\n");
    for (size_t i = 0; i < p.nodes.size(); ++i)
      std::printf("  n%zu [label=\"%s\\n%s\\n[%s]\", fillcolor=\"%s\"];\n", i, p.nodes[i].name.c_str(), placement_op_label(p.nodes[i]).c_str(),
                  p.nodes[i].ep.c_str(), colour[p.nodes[i].ep]);
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (int v : g.nodes[i].inputs)
        if (v >= 0 && g.values[v].producer >= 0) std::printf("  n%d -> n%zu;\n", g.values[v].producer, i);
    std::printf("  subgraph cluster_legend {\n    label=\"execution providers\";\n");
    for (auto& [ep, c] : colour) std::printf("    \"%s\" [fillcolor=\"%s\"];\n", ep.c_str(), c);
    std::printf("  }\n}\n");
    return 0;
  }
  std::fputs(explain_text(s, path).c_str(), stdout);
  return 0;
}

int cmd_providers(const Args& a) {
  const auto all = ep::list_providers();
  if (a.has("--json")) {
    Json j;
    j.begin_array();
    for (const auto& p : all) {
      j.begin_object();
      j.key("name").value(p.name).key("built").value(p.availability.built).key("loadable").value(p.availability.loadable);
      j.key("usable").value(p.availability.usable).key("reason").value(p.availability.reason);
      j.key("version").value(p.availability.version).key("module").value(p.availability.module);
      j.key("cmake_option").value(p.cmake_option);
      j.key("options").begin_array();
      for (const auto& o : p.options)
        j.begin_object().key("key").value(o.key).key("type").value(o.type).key("default").value(o.default_value).key("doc").value(o.doc).end_object();
      j.end_array().end_object();
    }
    j.end_array();
    std::printf("%s\n", j.str().c_str());
    return 0;
  }
  std::printf("%-13s %-6s %-9s %-7s %s\n", "provider", "built", "loadable", "usable", "version / reason");
  for (const auto& p : all) {
    const auto& av = p.availability;
    std::printf("%-13s %-6s %-9s %-7s %s\n", p.name.c_str(), av.built ? "yes" : "no", av.loadable ? "yes" : "no",
                av.usable ? "yes" : "no", av.usable ? av.version.c_str() : av.reason.c_str());
    for (const auto& o : p.options)
      std::printf("    %-22s %-18s default %-8s %s\n", o.key.c_str(), o.type.c_str(), o.default_value.c_str(), o.doc.c_str());
  }
  // ImageDecoder's codecs: BMP and PNM in libonyx, the rest in a module (docs/image-decoder.md).
  const cpu::ImageCodecsStatus codecs = cpu::image_codecs_status();
  if (codecs.loaded) {
    std::string formats = codecs.formats;
    for (size_t i = formats.find(','); i != std::string::npos; i = formats.find(',', i + 2)) formats.replace(i, 1, ", ");
    std::printf("\nimage codecs (ImageDecoder): bmp, pnm built in; %s from %s\n", formats.c_str(), codecs.module.c_str());
  }
  else
    std::printf("\nimage codecs (ImageDecoder): bmp, pnm built in; no others: %s\n", codecs.reason.c_str());
  return 0;
}

}  // namespace onyx::cli

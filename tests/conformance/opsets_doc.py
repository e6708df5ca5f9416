#!/usr/bin/env python3
"""Writes docs/opsets-22-28.md: every operator version of ai.onnx opsets 22 to 28 (and of the
ai.onnx.preview domain), what changed, and how its PyPI node tests fare on the CPU EP.

    python opsets_doc.py NODE_TEST_DIR EXPECT_FILE OUT.md

NODE_TEST_DIR is the node/ directory generate_node_tests.py wrote; EXPECT_FILE the CPU EP's
expectation file (its failing tests, with reasons). Needs the `onnx` package whose schemas
describe those opsets (the one that generated the tests). Tests are matched to an operator by
name (snake_case or lower-case prefix).
"""
import collections
import os
import re
import sys

from onnx import defs


def summarize_change(versions, s):
    prev = [p for p in versions if p.since_version < s.since_version]
    if not prev:
        return "new operator"
    p = max(prev, key=lambda x: x.since_version)
    parts = []
    attrs = sorted(set(s.attributes) - set(p.attributes))
    if attrs:
        parts.append("attribute" + ("s " if len(attrs) > 1 else " ") + ", ".join(f"`{a}`" for a in attrs))
    inputs = [i.name for i in s.inputs if i.name not in [x.name for x in p.inputs]]
    if inputs:
        parts.append("input" + ("s " if len(inputs) > 1 else " ") + ", ".join(f"`{a}`" for a in inputs))
    before = {t.type_param_str: set(t.allowed_type_strs) for t in p.type_constraints}
    after = {t.type_param_str: set(t.allowed_type_strs) for t in s.type_constraints}
    added, removed = set(), set()
    for k in after:
        added |= after[k] - before.get(k, set())
    for k in before:
        removed |= before[k] - after.get(k, set())

    def simple(ts):
        return sorted({re.sub(r"^(optional\(|seq\()*tensor\((.*?)\)\)*$", r"\2", t) for t in ts})

    if added:
        parts.append("types " + ", ".join(simple(added)))
    if removed:
        parts.append("no longer " + ", ".join(simple(removed)))
    return "; ".join(parts) if parts else "clarified specification"


def short_reason(reason):
    """The first clause of a failure reason, at most ~100 characters, cut at a word."""
    reason = re.sub(r"test_data_set_0 output.*", "values differ", reason).split(";")[0]
    if len(reason) > 100:
        reason = reason[:100].rsplit(" ", 1)[0] + " ..."
    return reason


def main(node_dir, expect_file, out):
    fails = {}
    for line in open(expect_file):
        if line.startswith("node/"):
            name, reason = line.rstrip("\n").split(" ", 1)
            fails[name[len("node/test_"):]] = reason
    tests = [t[len("test_"):] for t in sorted(os.listdir(node_dir))]
    history = [s for s in defs.get_all_schemas_with_history() if s.domain in ("", "ai.onnx", "ai.onnx.preview")]
    by_name = collections.defaultdict(list)
    for s in history:
        by_name[(s.domain or "ai.onnx", s.name)].append(s)
    sections = collections.defaultdict(list)
    for (domain, name), versions in by_name.items():
        for s in versions:
            if domain == "ai.onnx.preview":
                sections[f"ai.onnx.preview {s.since_version}"].append((name, summarize_change(versions, s)))
            elif s.since_version > 21:
                sections[f"Opset {s.since_version}"].append((name, summarize_change(versions, s)))

    def tests_for(name):
        snake = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)).lower()
        return [t for t in tests if t == snake or t.startswith(snake + "_") or t == name.lower() or t.startswith(name.lower() + "_")]

    lines = [
        "# Operators of opsets 22 to 28", "",
        "onnx 1.23 defines ai.onnx opsets up to 28. onyx loads models of every opset up to 28; this page",
        "lists each operator version those opsets introduced, what changed, and how the node tests of",
        "PyPI's onnx 1.23.2 that exercise it fare on the CPU EP (`conformance_cpu_onnx_pypi`, see",
        "[conformance.md](conformance.md); the failing ones are listed with their reasons in",
        "`tests/conformance/cpu-onnx-pypi.expect`). Tests are matched to an operator by name, so a count",
        "covers every version of that operator; `_expanded` tests run the operator's function body instead",
        "of the operator and are counted apart. Versions whose change only adds element types run as",
        "the previous version did where onyx has a kernel for the type; a missing type is an explicit",
        "`UnsupportedType` decline naming it. Unit tests of what the node tests leave at defaults are in",
        "`tests/unit/test_opset22_28.cpp`. The last section is the `ai.onnx.preview` domain (operators",
        "onnx publishes for trial before they join ai.onnx). This page is written by",
        "`tests/conformance/opsets_doc.py`.", ""]

    def order(key):
        domain, version = key.rsplit(" ", 1)
        return (domain != "Opset", int(version))

    for key in sorted(sections, key=order):
        lines += [f"## {key}", "", "| operator | change | node tests passing |", "| --- | --- | --- |"]
        for name, change in sorted(sections[key]):
            found = tests_for(name)
            plain = [t for t in found if "_expanded" not in t]
            expanded = [t for t in found if "_expanded" in t]
            if not plain:
                cell = "none"
            else:
                cell = f"{len([t for t in plain if t not in fails])} of {len(plain)}"
                if expanded:
                    cell += f" (and {len([t for t in expanded if t not in fails])} of {len(expanded)} of its function-body expansions)"
                bad = [fails[t] for t in plain if t in fails]
                if bad:
                    reasons = collections.Counter(short_reason(b) for b in bad)
                    cell += " (" + "; ".join(r for r, _ in reasons.most_common(2)) + ")"
            lines.append(f"| {name} | {change} | {cell} |")
        lines.append("")
    open(out, "w").write("\n".join(lines))


if __name__ == "__main__":
    main(*sys.argv[1:4])

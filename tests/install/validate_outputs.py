#!/usr/bin/python3
"""Validates every JSON document ptadvise writes against the published schemas in schemas/.

Runs check (with and without a baseline, with stale entries, with per-rank digests), summary (one trace and
several) and diff on
the scenario traces and, when present, on every trace of the shared corpus, and validates each output twice:
against the schema as published (extra fields allowed, for readers of later minor versions) and against a
strict copy in which every object documents all its fields, so a field added to an output without being
added to its schema fails here.

Usage: validate_outputs.py PTADVISE SCHEMA_DIR SCENARIO_DIR CORPUS_DIR
Exit 77 (skipped) after validating the scenario outputs when CORPUS_DIR is absent.
"""
import copy
import glob
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import jsonschema

from outcome import failures, finish

ptadvise, schema_dir, scenario_dir, corpus_dir = sys.argv[1:5]
schema_dir = pathlib.Path(schema_dir).resolve()


def strict(schema):
    """Every object schema with properties gets additionalProperties: false unless it says otherwise."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


published = {p.name: json.loads(p.read_text()) for p in schema_dir.glob("*.schema.json")}
for name, schema in published.items():
    jsonschema.Draft202012Validator.check_schema(schema)
strict_store = {schema_dir.joinpath(n).as_uri(): strict(s) for n, s in published.items()}
published_store = {schema_dir.joinpath(n).as_uri(): s for n, s in published.items()}


def validators(name):
    uri = schema_dir.joinpath(name).as_uri()
    result = []
    for store in (published_store, strict_store):
        resolver = jsonschema.RefResolver(base_uri=uri, referrer=store[uri], store=store)
        result.append(jsonschema.Draft202012Validator(store[uri], resolver=resolver))
    return result


counts = {"documents": 0, "traces": 0, "findings": 0}


def validate(name, document, label):
    counts["documents"] += 1
    for validator, kind in zip(validators(name), ("published", "strict")):
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        for error in errors[:3]:
            path = "/".join(str(p) for p in error.absolute_path)
            failures.append(f"{label}: {name} ({kind}) at /{path}: {error.message[:300]}")


def run(args, label, codes=(0, 1)):
    done = subprocess.run([ptadvise, *args], capture_output=True, text=True)
    if done.returncode not in codes:
        failures.append(f"{label}: exit {done.returncode}: {done.stderr.strip()[:500]}")
        return None
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as error:
        failures.append(f"{label}: not JSON: {error}")
        return None


def check_and_summary(traces, label, scratch, thorough):
    """thorough: baselines, every trace's own summary and every neighbouring pair's diff; else one check,
    one summary of all traces and a few diffs (the shapes are the same, the corpus is large)."""
    report = run(["check", "--format", "json", *traces], f"{label}: check")
    if report is not None:
        validate("check.schema.json", report, f"{label}: check")
        counts["traces"] += len(report["traces"])
        counts["findings"] += sum(len(t["findings"]) for t in report["traces"])
        for trace in report["traces"]:  # the embedded summary is a summary document of its own
            if "summary" not in trace:  # a job's entry: its ranks carry the summaries
                continue
            validate("summary.schema.json", trace["summary"], f"{label}: check summary of {trace['path']}")
    digest_file = os.path.join(scratch, f"{label}.digest.json")
    if run(["check", "--format", "json", "--digest-out", digest_file, *traces], f"{label}: digests") is not None:
        digests = sorted(glob.glob(os.path.join(scratch, f"{label}.digest*.json")))
        if len(digests) < min(len(traces), 2):
            failures.append(f"{label}: check --digest-out wrote {len(digests)} digests for {len(traces)} traces")
        for path in digests:
            with open(path) as digest:
                validate("digest.schema.json", json.load(digest), f"{label}: digest {os.path.basename(path)}")
    many = run(["summary", "--format", "json", *(traces if not thorough else traces[:3])],
               f"{label}: summary of several", codes=(0,))
    if many is not None:
        validate("summary.schema.json", many, f"{label}: summary of several")
    pairs = list(zip(traces, traces[1:]))
    for base, new in pairs if thorough else pairs[:: max(1, len(pairs) // 4)]:
        diff = run(["diff", "--format", "json", base, new], f"{label}: diff", codes=(0, 1))
        if diff is not None:
            validate("diff.schema.json", diff, f"{label}: diff {os.path.basename(base)} {os.path.basename(new)}")
    if not thorough:
        return
    baseline = os.path.join(scratch, f"{label}.baseline.yaml")
    accepted = run(["check", "--format", "json", "--write-baseline", baseline, *traces], f"{label}: write-baseline")
    if accepted is not None:
        validate("check.schema.json", accepted, f"{label}: check with a new baseline")
    # The baseline of all traces against the first alone: the others' findings are stale entries.
    stale = run(["check", "--format", "json", "--baseline", baseline, traces[0]], f"{label}: stale baseline")
    if stale is not None:
        validate("check.schema.json", stale, f"{label}: check with stale baseline entries")
        if len(traces) > 1 and accepted and accepted["findings_total"] > stale["findings_total"]:
            if not stale["baseline"]["stale"]:
                failures.append(f"{label}: the stale-baseline run lists no stale entries")
    for one in traces:
        single = run(["summary", "--format", "json", one], f"{label}: summary {one}", codes=(0,))
        if single is not None:
            validate("summary.schema.json", single, f"{label}: summary {os.path.basename(one)}")


with tempfile.TemporaryDirectory() as scratch:
    os.chdir(scratch)  # no .ptadvise.yaml of the caller's tree applies
    scenarios = sorted(glob.glob(os.path.join(scenario_dir, "*.json.gz")))
    check_and_summary(scenarios, "scenarios", scratch, thorough=True)
    corpus = sorted(glob.glob(os.path.join(corpus_dir, "*.json")) + glob.glob(os.path.join(corpus_dir, "*.json.gz")))
    if corpus:
        check_and_summary(corpus, "corpus", scratch, thorough=False)

finish(f"validated {counts['documents']} JSON documents ({counts['traces']} traces in check reports, "
       f"{counts['findings']} findings) against {', '.join(sorted(published))}",
       skipped=None if corpus else f"{corpus_dir} is absent (the shared trace corpus lives beside the project); "
                                   "only the scenario traces were validated")

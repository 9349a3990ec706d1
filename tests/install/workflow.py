#!/usr/bin/python3
"""Runs the commands of .pre-commit-hooks.yaml and of the composite action action.yml as pre-commit and
GitHub Actions would, against the built ptadvise, in a scratch repository with scenario traces.

pre-commit: each hook's entry + the staged files its `files` pattern selects (or none with
pass_filenames: false), with ptadvise on PATH; and, when pre-commit is installed, `pre-commit try-repo`.
action: every `run` step with its env, `${{ inputs.* }}` (defaults from action.yml), `${{ steps.*.outputs.* }}`
from $GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY and $GITHUB_ACTION_PATH; `uses` steps are not run (the SARIF they
would upload is validated against the SARIF schema instead, when ../shared/schemas has it).

Usage: workflow.py PTADVISE SOURCE_DIR SARIF_SCHEMA
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import yaml

from outcome import expect, finish

ptadvise, source, sarif_schema = sys.argv[1:4]


def scenario(name):
    return os.path.join(source, "testdata", "scenarios", name + ".json.gz")


def run_shell(command, cwd, env, args=()):
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command, "bash", *args],
                          cwd=cwd, env=env, capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def pre_commit_hooks(repo, env, staged):
    """Exit code of each hook over the staged files, run as pre-commit runs it."""
    hooks = yaml.safe_load(open(os.path.join(source, ".pre-commit-hooks.yaml")))
    codes = {}
    for hook in hooks:
        expect(hook.get("language") == "system", "%s: language %s" % (hook["id"], hook.get("language")))
        files = [f for f in staged if re.search(hook.get("files", ""), f)]
        if not files:
            continue
        command = shlex.split(hook["entry"]) + hook.get("args", [])
        if hook.get("pass_filenames", True):
            command += files
        done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
        codes[hook["id"]] = done.returncode
    return codes


def action_steps(repo, env, inputs):
    """Runs the action's `run` steps in order; returns (exit code of the last step run, outputs, log)."""
    action = yaml.safe_load(open(os.path.join(source, "action.yml")))
    values = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    values.update(inputs)
    outputs, log, code = {}, "", 0
    runner_temp = tempfile.mkdtemp(dir=repo)

    def substitute(text):
        def one(match):
            expression = match.group(1).strip()
            if expression.startswith("inputs."):
                return values[expression[len("inputs."):]]
            if expression == "runner.temp":
                return runner_temp
            step = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
            if step:
                return outputs.get(step.group(1), {}).get(step.group(2), "")
            raise ValueError("unknown expression " + expression)
        return re.sub(r"\$\{\{(.*?)\}\}", one, str(text))

    for step in action["runs"]["steps"]:
        if "uses" in step:
            continue
        expect(step.get("shell") == "bash", "step %s: shell %s" % (step.get("name"), step.get("shell")))
        output_file = os.path.join(runner_temp, "output-%s" % step.get("id", len(outputs)))
        open(output_file, "w").close()
        step_env = dict(env, GITHUB_OUTPUT=output_file, GITHUB_ACTION_PATH=source)
        step_env.update({key: substitute(value) for key, value in step.get("env", {}).items()})
        code, out, err = run_shell(step["run"], repo, step_env)
        log += out + err
        if "id" in step:
            outputs[step["id"]] = dict(line.split("=", 1) for line in open(output_file).read().splitlines() if "=" in line)
        if code != 0:
            break
    return code, outputs, log


with tempfile.TemporaryDirectory() as repo:
    bin_dir = os.path.join(repo, ".bin")
    os.makedirs(bin_dir)
    os.symlink(ptadvise, os.path.join(bin_dir, "ptadvise"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PTADVISE", "GITHUB_"))}
    env["PATH"] = bin_dir + os.pathsep + env["PATH"]
    env["PRE_COMMIT_HOME"] = os.path.join(repo, ".cache")
    os.makedirs(os.path.join(repo, "traces"))
    shutil.copy(scenario("02_assert_on_gpu_tensor"), os.path.join(repo, "traces", "run.pt.trace.json.gz"))
    shutil.copy(scenario("02_assert_on_gpu_tensor_fixed"), os.path.join(repo, "traces", "tuned.pt.trace.json.gz"))
    staged = ["traces/run.pt.trace.json.gz", "traces/tuned.pt.trace.json.gz", "train.py"]
    open(os.path.join(repo, "train.py"), "w").write("print('train')\n")

    # pre-commit, hook by hook: findings fail the commit, a baseline accepts them, a bad config is exit 2.
    codes = pre_commit_hooks(repo, env, staged)
    expect(codes == {"ptadvise-check": 1}, "pre-commit with findings: %s" % codes)
    subprocess.run([ptadvise, "check", "--write-baseline", ".ptadvise-baseline.yaml", *staged[:2]], cwd=repo,
                   env=env, capture_output=True)
    open(os.path.join(repo, ".ptadvise.yaml"), "w").write("baseline: .ptadvise-baseline.yaml\n")
    codes = pre_commit_hooks(repo, env, staged + [".ptadvise.yaml"])
    expect(codes == {"ptadvise-check": 0, "ptadvise-config": 0}, "pre-commit with a baseline: %s" % codes)
    open(os.path.join(repo, ".ptadvise.yaml"), "w").write("baseline: .ptadvise-baseline.yaml\nignore: [no-such-rule]\n")
    codes = pre_commit_hooks(repo, env, [".ptadvise.yaml"])
    expect(codes == {"ptadvise-config": 2}, "pre-commit with a wrong configuration: %s" % codes)
    os.remove(os.path.join(repo, ".ptadvise.yaml"))

    if shutil.which("pre-commit"):
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        subprocess.run(["git", "add", *staged], cwd=repo, check=True)
        done = subprocess.run(["pre-commit", "try-repo", source, "ptadvise-check", "--files", *staged],
                              cwd=repo, env=env, capture_output=True, text=True)
        expect(done.returncode == 1 and "ptadvise check" in done.stdout and "Failed" in done.stdout,
               "pre-commit try-repo: exit %d\n%s%s" % (done.returncode, done.stdout, done.stderr))
    else:
        print("pre-commit is not installed: its hooks were run from .pre-commit-hooks.yaml, not by pre-commit")

    # The action: findings fail the job, with annotations, a job summary and a SARIF report.
    summary = os.path.join(repo, "summary.md")
    action_env = dict(env, GITHUB_STEP_SUMMARY=summary)
    code, outputs, log = action_steps(repo, action_env, {"traces": "traces/", "ptadvise": ptadvise})
    expect(code == 1 and outputs["check"]["exit-code"] == "1", "action with findings: exit %d, %s\n%s" % (code, outputs, log))
    expect("::warning file=" in log or "::error file=" in log, "no annotations in the action's log:\n" + log)
    expect("::error title=ptadvise::new findings" in log, "the gate did not say why it failed:\n" + log)
    expect(os.path.exists(summary) and "PTA102" in open(summary).read(), "no job summary with the findings")
    sarif = os.path.join(repo, "ptadvise.sarif")
    expect(os.path.exists(sarif), "no SARIF report")
    if os.path.exists(sarif) and os.path.exists(sarif_schema):
        import jsonschema
        jsonschema.validate(json.load(open(sarif)), json.load(open(sarif_schema)))
    # With the baseline: only new findings fail, so the job passes.
    code, outputs, log = action_steps(repo, action_env, {"traces": "traces/", "ptadvise": ptadvise,
                                                          "baseline": ".ptadvise-baseline.yaml"})
    expect(code == 0 and outputs["check"]["exit-code"] == "0", "action with a baseline: exit %d\n%s" % (code, log))
    # An input error is not a pass.
    code, outputs, log = action_steps(repo, action_env, {"traces": "missing/", "ptadvise": ptadvise})
    expect(code == 2 and outputs["check"]["exit-code"] == "2", "action on a missing trace: exit %d\n%s" % (code, log))

finish("pre-commit hooks and the GitHub Action: findings fail, the baseline passes, input errors exit 2; "
       "annotations, job summary and SARIF written")

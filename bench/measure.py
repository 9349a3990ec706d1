#!/usr/bin/env python3
"""Time `ptadvise summary` side by side with its peers on the same bytes, and print Markdown tables.

Peers, each run as its own process on the same file, repetitions interleaved so that background load
falls on all of them alike:
  - ptadvise summary FILE.json           (and FILE.json.gz when present)
  - ptadvise check FILE.json             (with --check)
  - the same two pinned to one core      (taskset, when the process may run on several: the report gives how
                                         much faster one file is on all of them)
  - ptadvise check DIR                   (with --check: DIR holds two links to FILE.json, two ranks checked at
                                         once; the report gives its wall time against one rank's)
  - simdjson_walk FILE.json              bare simdjson On-Demand pass, every event field once (malloc with
                                         huge pages, as ptadvise runs)
  - gzip -dc FILE.json.gz > /dev/null
  - python3 -c 'json.load(...)' FILE.json

For each: wall time (median of --reps), CPU time (user+sys), MB/s of uncompressed JSON (10^6 bytes) per
wall second and per CPU second, and peak RSS (GNU time's %M). Standard library only.

    measure.py --ptadvise build-bench/cli/ptadvise --walk build-bench/bench/simdjson_walk \
               --reps 3 --json-out bench/out/results.json bench/data/a-100M.json bench/data/a-1G.json
"""

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

JSON_LOAD = "import json, sys\nwith open(sys.argv[1], 'rb') as f:\n    json.load(f)\n"


def run_once(argv, stdout_path=os.devnull):
    """Runs argv under /usr/bin/time; returns wall seconds, CPU seconds, peak RSS bytes, exit code, stderr tail.

    Peak RSS comes from /usr/bin/time (%M) rather than from our own wait4: a child forked from this Python
    process starts with Python's high-water mark, which would hide the RSS of small runs. CPU time comes
    from wait4 on the time process, which includes the reaped command (microsecond resolution).
    """
    fd, rss_path = tempfile.mkstemp(prefix="ptadvise-bench-", suffix=".time")
    os.close(fd)
    try:
        with open(stdout_path, "wb") as out:
            started = time.perf_counter()
            proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", rss_path] + list(argv),
                                    stdout=out, stderr=subprocess.PIPE)
            err = proc.stderr.read()  # drain while the command runs
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - started
            proc.returncode = os.waitstatus_to_exitcode(status)
        with open(rss_path) as f:
            lines = [line for line in f.read().splitlines() if line.strip()]
        # On a non-zero exit /usr/bin/time writes "Command exited with non-zero status N" first.
        rss_kib = int(lines[-1]) if lines and lines[-1].strip().isdigit() else 0
    finally:
        os.unlink(rss_path)
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "rss_bytes": rss_kib * 1024,  # GNU time reports KiB
        "exit": proc.returncode,
        "stderr": err.decode("utf-8", "replace").strip().splitlines()[-3:],
    }


def mem_available_bytes():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def machine_info(args):
    info = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = re.search(r"^Model name:\s*(.+)$", lscpu, re.M)
        info["cpu"] = model.group(1).strip() if model else platform.processor()
        virt = re.search(r"^Hypervisor vendor:\s*(.+)$", lscpu, re.M)
        if virt:
            info["cpu"] += f" (virtualised, {virt.group(1).strip()})"
    except OSError:
        info["cpu"] = platform.processor()
    info["cores"] = os.cpu_count()
    try:
        with open("/proc/meminfo") as f:
            total = int(re.search(r"MemTotal:\s*(\d+)", f.read()).group(1)) * 1024
        info["memory"] = f"{total / 2**30:.1f} GiB"
    except (OSError, AttributeError):
        info["memory"] = "unknown"
    info["kernel"] = platform.release()
    cache = os.path.join(args.build_dir, "CMakeCache.txt") if args.build_dir else None
    if cache and os.path.exists(cache):
        text = open(cache).read()
        compiler = re.search(r"^CMAKE_CXX_COMPILER:\w+=(.+)$", text, re.M)
        build_type = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", text, re.M)
        if compiler:
            version = subprocess.run([compiler.group(1), "--version"], capture_output=True, text=True).stdout
            info["compiler"] = version.splitlines()[0] if version else compiler.group(1)
        if build_type:
            info["build type"] = build_type.group(1)
    info["python"] = subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                                    capture_output=True, text=True).stdout.strip() + f" ({args.python})"
    gzip_version = subprocess.run(["gzip", "--version"], capture_output=True, text=True).stdout
    info["gzip"] = gzip_version.splitlines()[0] if gzip_version else "?"
    info["load before"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    # Results name the code they measured.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty", "--abbrev=10"],
                            capture_output=True, text=True).stdout.strip()
    info["commit"] = commit or "unknown (not a git checkout)"
    return info


ONE_CORE_SUMMARY = "ptadvise summary .json, one core"
ONE_CORE_CHECK = "ptadvise check .json, one core"
TWO_RANKS = "ptadvise check 2 ranks (2x the bytes)"


def two_rank_job(path, directory):
    """A job directory of two ranks that are both `path` (links), for timing ranks checked side by side."""
    job = os.path.join(directory, "job-" + os.path.basename(path))
    os.makedirs(job, exist_ok=True)
    for rank in (0, 1):
        link = os.path.join(job, f"rank{rank}.json")
        if not os.path.lexists(link):
            os.symlink(os.path.abspath(path), link)
    return job


def peers_for(path, args, scratch):
    gz = path + ".gz"
    # The same run pinned to one core, for how much the other cores take off one file's wall time.
    one_core = ["taskset", "-c", str(min(os.sched_getaffinity(0)))] if shutil.which("taskset") else None
    several = one_core is not None and len(os.sched_getaffinity(0)) > 1
    peers = [("ptadvise summary .json", [args.ptadvise, "summary", path])]
    if several:
        peers.append((ONE_CORE_SUMMARY, one_core + [args.ptadvise, "summary", path]))
    if os.path.exists(gz):
        peers.append(("ptadvise summary .json.gz", [args.ptadvise, "summary", gz]))
    if args.check:
        peers.append(("ptadvise check .json", [args.ptadvise, "check", path]))
        if several:
            peers.append((ONE_CORE_CHECK, one_core + [args.ptadvise, "check", path]))
        peers.append((TWO_RANKS, [args.ptadvise, "check", two_rank_job(path, scratch)]))
    # With glibc's malloc asking for huge pages, as ptadvise's own does (docs/TRACE_LOADING.md, "Huge pages"):
    # the limit gets the same help with page faults.
    peers.append(("simdjson On-Demand walk", ["env", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1", args.walk, path]))
    if os.path.exists(gz):
        peers.append(("gzip -dc .json.gz", ["gzip", "-dc", gz]))
    peers.append(("python json.load", [args.python, "-c", JSON_LOAD, path]))
    return peers


def warm_cache(path):
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def measure(args):
    with tempfile.TemporaryDirectory(prefix="ptadvise-bench-") as scratch:
        return measure_in(args, scratch)


def measure_in(args, scratch):
    results = {"machine": machine_info(args), "files": []}
    for path in args.files:
        size = os.path.getsize(path)
        gz = path + ".gz"
        entry = {"path": path, "bytes": size, "gz_bytes": os.path.getsize(gz) if os.path.exists(gz) else None,
                 "peers": {}}
        peers = peers_for(path, args, scratch)
        if args.only:
            wanted = [w.strip() for w in args.only.split(",") if w.strip()]
            peers = [(label, argv) for label, argv in peers if any(w in label for w in wanted)]
        skipped = {}
        available = mem_available_bytes()
        # json.load holds every event as Python objects; do not let it push the machine out of memory.
        if available is not None and args.json_load_factor * size > available:
            skipped["python json.load"] = (f"skipped: needs ~{args.json_load_factor:.0f}x the file "
                                           f"({args.json_load_factor * size / 1e9:.1f} GB), "
                                           f"{available / 1e9:.1f} GB available")
        for label, _ in peers:
            entry["peers"][label] = {"runs": [], "note": skipped.get(label)}
        for p in [path, gz]:
            if os.path.exists(p):
                warm_cache(p)
        for rep in range(args.reps):
            for label, argv in peers:
                if label in skipped:
                    continue
                run = run_once(argv)
                entry["peers"][label]["runs"].append(run)
                print(f"  [{os.path.basename(path)} rep {rep + 1}/{args.reps}] {label}: {run['wall_s']:.3f} s, "
                      f"{run['rss_bytes'] / 1e6:.0f} MB, exit {run['exit']}", file=sys.stderr)
                if run["exit"] not in (0, 1):
                    print("    " + "\n    ".join(run["stderr"]), file=sys.stderr)
        results["files"].append(entry)
    results["machine"]["load after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return results


def summarise(peer, size):
    runs = [r for r in peer["runs"] if r["exit"] in (0, 1)]
    if not runs:
        return None
    wall = statistics.median(r["wall_s"] for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    rss = statistics.median(r["rss_bytes"] for r in runs)
    return {"wall_s": wall, "cpu_s": cpu, "rss_bytes": rss, "mbps_wall": size / 1e6 / wall,
            "mbps_cpu": size / 1e6 / cpu if cpu > 0 else float("inf"), "rss_ratio": rss / size,
            "runs": len(runs), "walls": sorted(r["wall_s"] for r in runs)}


def markdown(results):
    lines = []
    m = results["machine"]
    lines.append("| machine | |")
    lines.append("|---|---|")
    for key, value in m.items():
        lines.append(f"| {key} | {value} |")
    lines.append("")
    stats = {}
    for entry in results["files"]:
        size = entry["bytes"]
        name = os.path.basename(entry["path"])
        gz = f", gzip {entry['gz_bytes'] / 1e6:.0f} MB" if entry["gz_bytes"] else ""
        lines.append(f"### {name}: {size / 1e6:.0f} MB uncompressed{gz}")
        lines.append("")
        lines.append("| peer | wall s (median; all runs) | CPU s | MB/s wall | MB/s per CPU-s | peak RSS MB | "
                     "RSS / file | wall / walk | CPU / walk |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        per_file = {label: summarise(peer, size) for label, peer in entry["peers"].items()}
        stats[entry["path"]] = (size, per_file)
        walk = per_file.get("simdjson On-Demand walk")
        for label, s in per_file.items():
            note = entry["peers"][label]["note"]
            if s is None:
                failure = entry["peers"][label]["runs"]
                why = note or (f"failed: exit {failure[0]['exit']}: {' '.join(failure[0]['stderr'])}"
                               if failure else "not run")
                lines.append(f"| {label} | {why} | | | | | | | |")
                continue
            vs_walk = f"{s['wall_s'] / walk['wall_s']:.2f}x" if walk else "-"
            cpu_vs_walk = f"{s['cpu_s'] / walk['cpu_s']:.2f}x" if walk and walk["cpu_s"] > 0 else "-"
            walls = ", ".join(f"{w:.3f}" for w in s["walls"])
            lines.append(f"| {label} | {s['wall_s']:.3f} ({walls}) | {s['cpu_s']:.3f} | {s['mbps_wall']:.0f} | "
                         f"{s['mbps_cpu']:.0f} | {s['rss_bytes'] / 1e6:.0f} | {s['rss_ratio']:.2f} | {vs_walk} | "
                         f"{cpu_vs_walk} |")
        one_rank, two_ranks = per_file.get("ptadvise check .json"), per_file.get(TWO_RANKS)
        if one_rank and two_ranks:
            lines.append("")
            lines.append(f"Two ranks of this file checked at once take {two_ranks['wall_s'] / one_rank['wall_s']:.2f}x "
                         f"the wall time of one ({m.get('cores', '?')} cores; 1.00 = the second rank is free, "
                         f"2.00 = no overlap).")
        for label, alone in ((ONE_CORE_SUMMARY, "ptadvise summary .json"), (ONE_CORE_CHECK, "ptadvise check .json")):
            pinned, free = per_file.get(label), per_file.get(alone)
            if pinned and free:
                lines.append("")
                lines.append(f"`{alone.rsplit(' ', 1)[0]}` of this file is {pinned['wall_s'] / free['wall_s']:.2f}x "
                             f"faster on the {m.get('cores', '?')} cores than on one (wall time, medians).")
        summary = per_file.get("ptadvise summary .json")
        pyload = per_file.get("python json.load")
        if summary and pyload:
            lines.append("")
            lines.append(f"`ptadvise summary` is {pyload['wall_s'] / summary['wall_s']:.1f}x faster than "
                         f"`json.load` of the same file.")
        lines.append("")
    if len(stats) >= 2:
        ordered = sorted(stats.values(), key=lambda x: x[0])
        (small_size, small), (big_size, big) = ordered[0], ordered[-1]
        lines.append(f"### Growth from {small_size / 1e6:.0f} MB to {big_size / 1e6:.0f} MB "
                     f"({big_size / small_size:.2f}x the bytes)")
        lines.append("")
        lines.append("| peer | wall ratio | wall per byte, large / small (1.00 = linear) | CPU per byte, large / small | "
                     "RSS ratio |")
        lines.append("|---|---|---|---|---|")
        for label in small:
            a, b = small.get(label), big.get(label)
            if not a or not b:
                continue
            time_ratio = b["wall_s"] / a["wall_s"]
            cpu_ratio = b["cpu_s"] / a["cpu_s"] if a["cpu_s"] > 0 else float("nan")
            lines.append(f"| {label} | {time_ratio:.2f} | {time_ratio / (big_size / small_size):.2f} | "
                         f"{cpu_ratio / (big_size / small_size):.2f} | {b['rss_bytes'] / a['rss_bytes']:.2f} |")
        lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", help="uncompressed traces; FILE.gz beside each is used when present")
    parser.add_argument("--ptadvise", help="path of the ptadvise binary")
    parser.add_argument("--walk", help="path of simdjson_walk")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the json.load peer")
    parser.add_argument("--build-dir", help="build directory (for the compiler and build type in the report)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="also time `ptadvise check`")
    parser.add_argument("--json-load-factor", type=float, default=12.0,
                        help="skip json.load when this multiple of the file exceeds MemAvailable (default 12)")
    parser.add_argument("--json-out", help="write every run's raw numbers here")
    parser.add_argument("--report", metavar="RESULTS_JSON", help="print the tables of an earlier --json-out; run nothing")
    parser.add_argument("--only", help="comma-separated parts of peer names to run (e.g. 'ptadvise,walk')")
    args = parser.parse_args()
    if args.report:
        with open(args.report) as f:
            print(markdown(json.load(f)))
        return 0
    if not args.files or not args.ptadvise or not args.walk:
        parser.error("FILES, --ptadvise and --walk are required (or --report RESULTS_JSON)")
    for tool in (args.ptadvise, args.walk):
        if not shutil.which(tool) and not os.access(tool, os.X_OK):
            parser.error(f"{tool}: not an executable")
    results = measure(args)
    if args.json_out:
        os.makedirs(os.path.dirname(os.path.abspath(args.json_out)), exist_ok=True)
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

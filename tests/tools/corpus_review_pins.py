#!/usr/bin/env python3
"""Re-pin tests/unit/rules/corpus_review.tsv from `ptadvise check --format json` on ../shared/traces.

Keeps each trace's verdicts and reason: a finding keeps its mark (`!` = judged not real in
docs/CORPUS_REVIEW.md) when the same rule is still reported at the same occurrence (the n-th finding of
that rule in rank order); a finding that is new gets `?` (unreviewed), which the corpus test rejects until
someone reviews it against the trace and updates docs/CORPUS_REVIEW.md. Prints what changed.

usage: corpus_review_pins.py PTADVISE [--traces DIR] [--write]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, '..', 'unit', 'rules', 'corpus_review.tsv')


def parse_findings(column):
    out = []
    if column == '-':
        return out
    for item in column.split():
        rule, _, rest = item.partition('=')
        mark = rest[-1] if rest and rest[-1] in '!?' else ''
        out.append((rule, float(rest.rstrip('!?')), mark))
    return out


def checked(ptadvise, path):
    run = subprocess.run([ptadvise, 'check', '--format', 'json', '--exit-zero', path], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f'{path}: ptadvise exited {run.returncode}: {run.stderr.strip()}')
    trace = json.loads(run.stdout)['traces'][0]
    return sorted(trace['findings'], key=lambda f: f['rank'])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('ptadvise')
    parser.add_argument('--traces', default=os.path.join(HERE, '..', '..', '..', 'shared', 'traces'))
    parser.add_argument('--write', action='store_true', help='rewrite the table (default: only print changes)')
    args = parser.parse_args()
    lines = open(TABLE).read().splitlines()
    out, changed = [], 0
    for line in lines:
        if not line or line.startswith('#'):
            out.append(line)
            continue
        trace, top, column, why = line.split('\t')
        old = parse_findings(column)
        marks = {}
        seen = {}
        for rule, _, mark in old:
            seen[rule] = seen.get(rule, 0) + 1
            marks[(rule, seen[rule])] = mark
        seen = {}
        items = []
        for finding in checked(args.ptadvise, os.path.join(args.traces, trace)):
            rule = finding['rule_id']
            seen[rule] = seen.get(rule, 0) + 1
            mark = marks.get((rule, seen[rule]), '?')
            items.append(f"{rule}={finding['saving_ms_per_step']:.3f}{mark}")
        new_column = ' '.join(items) if items else '-'
        if new_column != column:
            changed += 1
            print(f'{trace}\n  was {column}\n  now {new_column}')
        out.append('\t'.join([trace, top, new_column, why]))
    if args.write:
        with open(TABLE, 'w') as f:
            f.write('\n'.join(out) + '\n')
    print(f'{changed} trace(s) changed' + ('' if args.write else ' (not written; --write to rewrite)'))


if __name__ == '__main__':
    main()

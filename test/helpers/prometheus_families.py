"""Parses a Prometheus text exposition (stdin) with the Prometheus project's own Python client,
prometheus_client.parser.text_string_to_metric_families, and prints its families as JSON
(stdout) for test/helpers/prometheus-text.ts. A line the parser refuses exits non-zero with its
message on stderr. Values that JSON cannot hold (NaN, +Inf, -Inf) are written as strings.
"""
import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def value(number):
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    return number


families = [
    {
        "name": family.name,
        "type": family.type,
        "help": family.documentation,
        "samples": [{"name": s.name, "labels": s.labels, "value": value(s.value)} for s in family.samples],
    }
    for family in text_string_to_metric_families(sys.stdin.read())
]
json.dump(families, sys.stdout)

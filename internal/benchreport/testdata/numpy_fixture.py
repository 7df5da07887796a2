"""Makes testdata/numpy/*.json: bench result files whose summary numbers are
computed with numpy exactly as `vllm bench serve` computes them
(calculate_metrics: success filter, TPOT = (latency - ttft)/(output_len - 1)
for output_len > 1 and 0 for goodput otherwise, np.mean/np.std/np.median/
np.percentile, goodput = every objective s >= value, rates over duration).

Run with a Python that has numpy: /usr/bin/python3 testdata/numpy_fixture.py
The Go tests only read the files it writes.
"""
import json
import random

import numpy as np

PERCENTILES = [50.0, 90.0, 95.0, 99.0]
GOODPUT = {"ttft": 500.0, "tpot": 50.0, "e2el": 8000.0}


def make(seed, n, with_latencies, with_start):
    r = random.Random(seed)
    out = {"input_lens": [], "output_lens": [], "ttfts": [], "itls": [],
           "errors": [], "generated_texts": []}
    lat, starts = [], []
    t = 0.0
    for _ in range(n):
        t += r.expovariate(4.0)
        if r.random() < 0.08:  # failed: vLLM saves ttft 0, no itl, output 0
            out["input_lens"].append(r.randint(1, 900))
            out["output_lens"].append(0)
            out["ttfts"].append(0.0)
            out["itls"].append([])
            out["errors"].append("Bad Request")
            out["generated_texts"].append("")
            lat.append(0.0)
            starts.append(t)
            continue
        olen = 1 if r.random() < 0.15 else r.randint(2, 120)
        ttft = r.choice([0.5, 0.25, r.lognormvariate(-1.2, 0.8)])
        chunks = max(olen - 1 - (r.randint(0, 3) if olen > 5 else 0), 0)
        itl = [r.choice([0.05, r.lognormvariate(-3.2, 0.4)]) for _ in range(chunks)]
        latency = ttft + sum(itl)
        out["input_lens"].append(r.randint(1, 900))
        out["output_lens"].append(olen)
        out["ttfts"].append(ttft)
        out["itls"].append(itl)
        out["errors"].append("")
        out["generated_texts"].append("")
        lat.append(latency)
        starts.append(t)
    if with_latencies:
        out["latencies"] = lat
    if with_start:
        out["start_times"] = starts
    out["duration"] = max(s + l for s, l in zip(starts, lat)) + 0.01
    return out, lat


def metrics(f, lat):
    ttfts, tpots, all_tpots, itls, e2els = [], [], [], [], []
    completed = good = total_in = total_out = 0
    for i in range(len(f["ttfts"])):
        success = f["errors"][i] == ""
        if not success:
            continue
        olen = f["output_lens"][i]
        total_in += f["input_lens"][i]
        total_out += olen
        tpot = 0.0
        if olen > 1:
            tpot = (lat[i] - f["ttfts"][i]) / (olen - 1)
            tpots.append(tpot)
        all_tpots.append(tpot)
        itls += f["itls"][i]
        ttfts.append(f["ttfts"][i])
        e2els.append(lat[i])
        completed += 1
    slo = [GOODPUT["ttft"] / 1000, GOODPUT["tpot"] / 1000, GOODPUT["e2el"] / 1000]
    for m in zip(ttfts, all_tpots, e2els):
        if all(s >= v for s, v in zip(slo, m)):
            good += 1
    d = f["duration"]
    f.update(completed=completed, failed=len(f["ttfts"]) - completed,
             total_input_tokens=total_in, total_output_tokens=total_out,
             request_throughput=completed / d, request_goodput=good / d,
             output_throughput=total_out / d,
             total_token_throughput=(total_in + total_out) / d)
    for name, v in [("ttft", ttfts), ("tpot", tpots), ("itl", itls), ("e2el", e2els)]:
        f[f"mean_{name}_ms"] = float(np.mean(v or 0) * 1000)
        f[f"median_{name}_ms"] = float(np.median(v or 0) * 1000)
        f[f"std_{name}_ms"] = float(np.std(v or 0) * 1000)
        for p in PERCENTILES:
            f[f"p{int(p)}_{name}_ms"] = float(np.percentile(v or 0, p) * 1000)


for seed, n, with_lat, with_start in [(1, 3, True, True), (2, 60, True, True),
                                      (3, 400, False, True), (4, 600, True, False)]:
    f, lat = make(seed, n, with_lat, with_start)
    f.update(date="20260101-000000", backend="vllm", model_id="fixture",
             request_rate=4.0, burstiness=1.0, max_concurrency=None,
             num_prompts=n)
    metrics(f, lat)
    with open(f"numpy/n{n}.json", "w") as out:
        json.dump(f, out)

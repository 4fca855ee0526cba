"""``specsim serve-sim`` and ``serve-sweep``: the request-level simulation on the command line."""

from __future__ import annotations

import argparse
import sys

from ..report import describe, ms, print_json, print_notes, table
from ._args import deployment, resolve_acceptance

__all__ = ["run_serve_sim", "run_serve_sweep"]


def _setup(args: argparse.Namespace):
    from ..serving import EngineLimits

    dep = deployment(args)
    acc, acc_label = resolve_acceptance(args)
    limits = EngineLimits(args.max_num_seqs, args.max_batched_tokens)
    slo = (None if args.slo_ttft_ms is None else args.slo_ttft_ms / 1e3, None if args.slo_tpot_ms is None else args.slo_tpot_ms / 1e3)
    gamma = "schedule" if args.gamma is None else args.gamma
    return acc, acc_label, dep, limits, slo, gamma


def _window_clause(dep) -> str:
    """Serve-sim's KV capacity is in full-attention tokens; say when window layers make a request reserve less."""
    t = dep.target
    if not t.n_sliding_layers:
        return ""
    return (f"; {t.n_sliding_layers} of {t.n_layers} layers keep at most {t.sliding_window:,} tokens, so a request "
            "reserves less than its length (the same KV as specsim capacity)")


def run_serve_sim(args: argparse.Namespace) -> int:
    import numpy as np

    from .._io import check_output
    from ..serving import requests_for, serve_compare

    if args.csv:
        check_output(args.csv, (".csv",), "--csv")
    acc, acc_label, dep, limits, slo, gamma = _setup(args)
    requests, concurrency = requests_for(dep.target, rate=args.rate, concurrency=args.concurrency, trace=args.trace,
                                         workload=args.workload, n=args.requests, rng=np.random.default_rng(args.seed))
    plain, spec, meta = serve_compare(dep, requests, acc, gamma, limits, concurrency, args.seed, args.memory_util, args.gamma_max)
    summaries = [r.summary(*slo) for r in (plain, spec)]
    if args.csv:
        _write_requests(args.csv, requests, plain, spec)
    provenance = dep.provenance() + [f"load: {requests.source}" + (f", {concurrency} users" if concurrency else ""),
                                     f"acceptance: {acc_label}; speculation: {meta['gamma_policy']}",
                                     f"engine limits: max_num_seqs {limits.max_num_seqs}, max_batched_tokens "
                                     f"{limits.max_batched_tokens}; KV capacity {meta['kv_capacity_tokens_plain']:,.0f} tokens "
                                     f"without the draft, {meta['kv_capacity_tokens_spec']:,.0f} with it (prompt + output reserved per request)"
                                     + _window_clause(dep)]
    if args.json:
        print_json({"off": summaries[0], "on": summaries[1], "provenance": provenance, "gamma_by_batch": meta["gamma_by_batch"]})
    else:
        print(describe(dep, int(meta["context_hint"])))
        for line in provenance[len(dep.provenance()):]:
            print(line)
        print()
        _print_summaries(*summaries)
    for r in (plain, spec):
        for note in r.notes:
            print(f"note: {note}", file=sys.stderr)
    print_notes(dep)
    return 0


def _write_requests(path, requests, plain, spec) -> None:
    import numpy as np
    import pandas as pd

    from .._io import atomic_write_bytes

    frames = [pd.DataFrame({"speculation": name, "request": np.arange(len(requests)), "arrival_s": r.arrival_s,
                            "first_token_s": r.first_token_s, "finish_s": r.finish_s, "prompt_tokens": r.prompt,
                            "output_tokens": r.output, "never_fit": r.rejected})
              for name, r in (("off", plain), ("on", spec))]
    atomic_write_bytes(path, pd.concat(frames).to_csv(index=False).encode())


def _print_summaries(off: dict, on: dict) -> None:
    def trio(d, scale, unit):
        if d["p50"] is None:
            return "n/a"
        return f"{d['p50'] * scale:.1f} / {d['p90'] * scale:.1f} / {d['p99'] * scale:.1f} {unit}"

    def num(x, fmt):
        return "n/a" if x is None else format(x, fmt)

    rows = [
        ["TTFT p50 / p90 / p99", trio(off["ttft_s"], 1e3, "ms"), trio(on["ttft_s"], 1e3, "ms")],
        ["TPOT p50 / p90 / p99", trio(off["tpot_s"], 1e3, "ms"), trio(on["tpot_s"], 1e3, "ms")],
        ["end-to-end p50 / p90 / p99", trio(off["e2e_s"], 1, "s"), trio(on["e2e_s"], 1, "s")],
        ["output tokens/s", num(off["output_tokens_per_s"], ",.0f"), num(on["output_tokens_per_s"], ",.0f")],
        ["requests/s served", num(off["requests_per_s"], ".2f"), num(on["requests_per_s"], ".2f")],
        ["running batch mean (max)", f"{off['mean_running_batch']:.1f} ({off['max_running_batch']})",
         f"{on['mean_running_batch']:.1f} ({on['max_running_batch']})"],
        ["requests served / never fit", f"{off['served']} / {off['never_fit']}", f"{on['served']} / {on['never_fit']}"],
    ]
    if "goodput_requests_per_s" in off:
        rows.append(["goodput (both SLOs met)", f"{off['goodput_requests_per_s']:.2f} req/s ({off['slo_met']})",
                     f"{on['goodput_requests_per_s']:.2f} req/s ({on['slo_met']})"])
    print(table(["", "speculation off", "speculation on"], rows, "<>>"))
    if off["tpot_s"]["p50"] is None or on["tpot_s"]["p50"] is None:
        print("\nno TPOT to compare: no served request produced a second token (TPOT is the time between output tokens)")
        return
    change = on["tpot_s"]["p50"] / off["tpot_s"]["p50"] - 1
    print(f"\nspeculation changes TPOT p50 by {change:+.1%} and throughput by "
          f"{on['output_tokens_per_s'] / off['output_tokens_per_s'] - 1:+.1%} at this load")


def run_serve_sweep(args: argparse.Namespace) -> int:
    from .._io import check_output
    from ..serving import DEFAULT_SLO_ATTAINMENT, serve_sweep, sweep_findings
    from ..workloads import get_workload

    if args.plot:
        check_output(args.plot, (".png", ".svg"), "--plot")
    acc, acc_label, dep, limits, slo, gamma = _setup(args)
    workload, n = get_workload(args.workload), args.requests
    executor = None
    if args.workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        executor = ProcessPoolExecutor(max_workers=args.workers)
    try:
        frame = serve_sweep(dep, args.rates, workload, n, acc, gamma, limits, args.seed, *slo, args.gamma_max, executor=executor)
    finally:
        if executor is not None:
            executor.shutdown()
    findings = sweep_findings(frame)
    if args.plot:
        from ..plots import save_serve_sweep

        save_serve_sweep(frame, args.plot, title=f"{dep.target.name} + {dep.drafter.name} on {dep.hardware.name}, "
                                                 f"{workload.name}, {acc_label}")
    if args.json:
        print_json({"rates": frame.to_dict(orient="records"), "findings": findings, "acceptance": acc_label,
                    "workload": workload.name, "provenance": dep.provenance()})
        print_notes(dep)
        return 0
    print(describe(dep, 0).replace("; context 0 tokens", ""))
    print(f"workload {workload.name} ({workload.source}); {n} requests per rate; {acc_label}\n")
    cols = ["rate", "off_tpot_p50_s", "on_tpot_p50_s", "off_tpot_p99_s", "on_tpot_p99_s", "off_tokens_per_s", "on_tokens_per_s",
            "off_mean_batch", "on_mean_batch"]
    headers = ["req/s", "TPOT p50 off", "on", "TPOT p99 off", "on", "tok/s off", "on", "batch off", "on"]
    rows = [[f"{r.rate:g}", ms(r.off_tpot_p50_s), ms(r.on_tpot_p50_s), ms(r.off_tpot_p99_s), ms(r.on_tpot_p99_s),
             f"{r.off_tokens_per_s:,.0f}", f"{r.on_tokens_per_s:,.0f}", f"{r.off_mean_batch:.1f}", f"{r.on_mean_batch:.1f}"]
            for r in frame[cols].itertuples()]
    if "off_slo_attainment" in frame:
        headers += ["SLO met off", "on"]
        rows = [row + [f"{a:.0%}", f"{b:.0%}"] for row, a, b in zip(rows, frame.off_slo_attainment, frame.on_slo_attainment)]
    print(table(headers, rows, ">" * len(headers)))
    stop = findings["speculation_stops_helping_at_rate"]
    print("\nspeculation lowers TPOT p50 at every rate swept" if stop is None else
          f"\nspeculation stops lowering TPOT p50 at {stop:g} requests/s")
    if "max_rate_meeting_slo_off" in findings:
        fmt = lambda v: "none of the rates swept" if v is None else f"{v:g} requests/s"  # noqa: E731
        print(f"largest rate meeting the SLOs ({DEFAULT_SLO_ATTAINMENT:.0%} of requests): {fmt(findings['max_rate_meeting_slo_off'])} "
              f"without speculation, {fmt(findings['max_rate_meeting_slo_on'])} with it")
    print_notes(dep)
    return 0

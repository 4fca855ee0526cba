"""Commands that show or check what specsim holds or what a measurement implies: toy, acceptance, alpha, hardware,
engines, models, reproduce and figures."""

from __future__ import annotations

import argparse
import sys

from specsim.cli.flags import int_at_least, names, nonempty, nonneg_number, number
from specsim.cli.report import print_json, table
from specsim.core.limits import MAX_GAMMA, MAX_SEED

__all__ = [
    "run_acceptance",
    "run_alpha",
    "run_engines",
    "run_figures",
    "run_hardware",
    "run_models",
    "run_reproduce",
    "run_toy",
]


def run_toy(args: argparse.Namespace) -> int:
    from specsim.article import toy

    if args.experiment == "exactness":
        hand = toy.hand_example(seed=args.seed)
        result = toy.exactness(seed=args.seed)
        if args.json:
            print_json({"hand_example": hand, "bigram": result})
            return 0
        print("hand example: p = (0.6, 0.3, 0.1), q = (0.3, 0.6, 0.1)")
        print(
            f"  beta = sum min(p, q) = {hand['beta']:g}; draft B accepted with probability {hand['accept_b']:g}; "
            f"residual max(0, p - q) normalised = {hand['residual']} (always A)"
        )
        print(f"  output distribution, exact enumeration: {hand['exact_output']}  (= p)")
        mc = ", ".join(f"{v:.4f}" for v in hand["mc_output"])
        print(
            f"  Monte Carlo, {hand['samples']:,} steps: ({mc}); TV from p {hand['mc_tv']:.4f}, chi-square p-value {hand['mc_chi2_p']:.3f}"
        )
        print()
        print(
            f"bigram target ({result['vocab']} tokens, logits N(0, 2^2)), draft logits + N(0, 1.2^2), seed {result['seed']}: "
            f"alpha under the target's stationary distribution = {result['alpha_stationary']:.4f}"
        )
        print(
            f"token {result['position']} of {result['generations']:,} generations, speculative sampling with gamma = {result['gamma']}:"
        )
        print(
            table(
                ["sampler", "TV from exact marginal", "chi-square p-value"],
                [
                    [
                        "speculative (gamma = 4)",
                        f"{result['tv_speculative']:.4f}",
                        f"{result['chi2_p_speculative']:.3f}",
                    ],
                    ["plain target sampling", f"{result['tv_plain']:.4f}", f"{result['chi2_p_plain']:.3f}"],
                ],
                "<>>",
            )
        )
        print(
            f"expected TV of an exact sample of this size (sampling noise): {result['tv_noise_level']:.4f}; "
            "the article's run gave 0.0101 and 0.0089"
        )
        return 0
    if args.experiment == "tokens-per-step":
        result = toy.tokens_per_step(seed=args.seed)
        if args.json:
            print_json(result)
            return 0
        print(
            f"bigram toy, seed {result['seed']}: alpha = {result['alpha_stationary']:.4f} under the target's stationary distribution"
        )
        print(
            table(
                ["gamma", "measured tokens/pass", "formula E(alpha, gamma)", "difference", "target passes"],
                [
                    [
                        r["gamma"],
                        f"{r['measured']:.4f}",
                        f"{r['formula']:.4f}",
                        f"{r['relative_error']:+.2%}",
                        f"{r['passes']:,}",
                    ]
                    for r in result["rows"]
                ],
                ">>>>>",
            )
        )
        print(
            "the article: measured 1.634, 2.038, 2.297, 2.472, 2.645, 2.707 against 1.638, 2.044, 2.303, 2.469, 2.641, 2.712"
        )
        return 0
    result = toy.realign(seed=args.seed)
    if args.json:
        print_json(result)
        return 0
    print(
        f"re-aligning a stale rank-{result['rank']} draft to a fine-tuned {result['vocab']}-token bigram target, seed {result['seed']}"
    )
    print("alpha and tokens per step (gamma = 4) under the fine-tuned target's stationary distribution\n")
    stale = result["rows"][0]["tokens_per_step_gamma4"]
    print(
        table(
            ["draft", "alpha", "tokens/step", "vs stale", "greedy agreement"],
            [
                [
                    r["draft"],
                    f"{r['alpha']:.3f}",
                    f"{r['tokens_per_step_gamma4']:.2f}",
                    f"{r['tokens_per_step_gamma4'] / stale - 1:+.0%}",
                    f"{r['greedy_agreement']:.3f}",
                ]
                for r in result["rows"]
            ],
            "<>>>>",
        )
    )
    print(
        "\nthe article: stale 2.39, SFT 3.33, TVD 3.96 (about 0.88 acceptance), KL objectives in between, on-policy no extra gain"
    )
    return 0


def run_acceptance(args: argparse.Namespace) -> int:
    from specsim.speculation.sampling import load_logits, logits_acceptance_summary

    out = logits_acceptance_summary(
        load_logits(args.target_logits, "target logits"),
        load_logits(args.draft_logits, "draft logits"),
        args.temperature,
    )
    alpha = out["alpha"]
    if args.json:
        print_json(out)
        return 0
    print(f"{out['positions']:,} positions x {out['vocab']:,} tokens at temperature {args.temperature:g}")
    pct = out["alpha_percentiles"]
    print(
        f"alpha = mean of sum min(p, q) = {alpha:.4f} (std {out['alpha_std']:.3f}; 10/50/90th percentiles "
        f"{pct['10']:.3f} / {pct['50']:.3f} / {pct['90']:.3f})\n"
    )
    print(
        table(
            ["gamma", "tokens/step (independent, alpha)", "if acceptance is shared within a step"],
            [[r["gamma"], f"{r['independent']:.3f}", f"{r['correlated_bound']:.3f}"] for r in out["tokens_per_round"]],
            ">>>",
        )
    )
    print(f"\nnext: specsim optimal-gamma --alpha {alpha:.3f} ...")
    return 0


def run_engines(args: argparse.Namespace) -> int:
    from specsim.engines import PRESETS, engine_record, get_engine

    if args.action == "show":
        if not args.name:
            raise ValueError("engines show needs a preset: what --engine takes (vllm@0.24.0, sglang, trtllm@latest)")
        preset = get_engine(args.name)
        record = engine_record(preset)
        if args.json:
            print_json(record)
            return 0
        print(preset.describe())
        if record["releases"]:
            print(f"  releases: {record['releases']} ({record['release']})")
        for kind, how in record["drafters"].items():
            print(f"  --draft {kind}: {how}")
        return 0
    records = [engine_record(p) for p in PRESETS.values()]
    if args.json:
        print_json(records)
        return 0
    rows = []
    for r in records:
        terms = r["round_host_terms"]
        rows.append(
            [
                r["preset"],
                r["releases"] or "-",
                f"{r['iteration_ms']:.2f} / {r['kernel_iteration_ms']:.2f}",
                f"{r['collective_us']:.1f}",
                f"{terms['round_ms']:.2f}",
                f"{terms['draft_step_ms']:.3f}",
                f"{terms['sequence_us']:.1f}",
                f"{terms['sequence_step_us']:.1f}",
                ", ".join(r["overlapped_for"]) or "-",
            ]
        )
    head = ["preset", "releases", "iteration ms (roofline / GPU)", "collective us"]
    print(table([*head, "round ms", "step ms", "seq us", "seq-step us", "round overlapped for"], rows, "<<>>>>>><"))
    print(
        "round: the host time a speculative round adds, per round, per draft step, per sequence and per sequence and "
        "draft step; specsim engines show PRESET says where each term comes from and which drafters its engine takes"
    )
    return 0


def run_hardware(args: argparse.Namespace) -> int:
    from specsim.answers import hardware_record
    from specsim.describe.hardware import builtin_names, load_hardware

    if args.action == "show":
        hw = load_hardware(args.name)
        if args.json:
            print_json(hardware_record(hw))
            return 0
        print(f"{hw.name}: {hw.description}")
        print(f"  dense 16-bit peak   {hw.peak_flop_per_s / 1e12:9.5g} TFLOP/s")
        if hw.peak_fp8_flop_per_s:
            print(f"  dense FP8 peak      {hw.peak_fp8_flop_per_s / 1e12:9.5g} TFLOP/s")
        print(f"  memory bandwidth    {hw.peak_bytes_per_s / 1e12:9.3f} TB/s")
        print(f"  memory capacity     {hw.memory_bytes / 1e9:9.1f} GB ({hw.memory_bytes / 2**30:.1f} GiB)")
        if hw.compute_capability:
            print(f"  compute capability  {hw.compute_capability:>9} (sm_{hw.compute_capability.replace('.', '')})")
        print(f"  efficiencies        compute {hw.compute_eff:.3g}, bandwidth {hw.bandwidth_eff:.3g}")
        print(
            f"  overhead            {hw.overhead_s * 1e3:.3f} ms per forward pass"
            + (f" + {hw.per_layer_overhead_s * 1e6:.2f} us per layer" if hw.per_layer_overhead_s else "")
        )
        print(
            f"  ridge               {hw.ridge_flop_per_byte:.1f} FLOP/byte (datasheet peaks: {hw.peak_ridge_flop_per_byte:.1f})"
        )
        for key, url in hw.sources.items():
            print(f"  source of {key}: {url}")
        if hw.calibration:
            print(f"  calibrated from {hw.calibration.get('source', '?')} on {hw.calibration.get('date', '?')}")
        if hw.notes:
            print("  " + hw.notes.replace("\n", "\n  "))
        return 0
    records = [hardware_record(load_hardware(name)) for name in builtin_names()]
    if args.json:
        print_json(records)
        return 0
    rows = []
    for name, record in zip(builtin_names(), records):
        hw = load_hardware(name)
        rows.append(
            [
                name,
                f"{hw.peak_flop_per_s / 1e12:.4g}",
                f"{hw.peak_bytes_per_s / 1e12:.3g}",
                f"{hw.memory_bytes / 2**30:.0f}",
                f"{hw.compute_eff:.2f}/{hw.bandwidth_eff:.2f}",
                f"{hw.overhead_s * 1e3:.3f}",
                f"{hw.ridge_flop_per_byte:.0f}",
                record["efficiencies_from"],
            ]
        )
    print(
        table(
            ["name", "TFLOP/s", "TB/s", "GiB", "eff c/bw", "overhead ms", "ridge", "efficiencies from"],
            rows,
            "<>>>>>><",
        )
    )
    from specsim.describe.hardware import ALIASES

    print("\naliases: " + ", ".join(f"{a} = {t}" for a, t in ALIASES.items()))
    print("show one: specsim hardware show NAME; use your own: --hardware path/to/profile.yaml")
    return 0


def run_models(args: argparse.Namespace) -> int:
    from specsim.describe.models import builtin_model_names, catalog_draft, catalog_entry, format_count, get_model

    if args.action == "show":
        model = get_model(args.name)
        d = model.to_dict()
        entry = catalog_entry(args.name)
        if entry is not None:
            d["catalog"] = entry
        if args.json:
            print_json(d)
            return 0
        width = max(map(len, d))
        for key, value in d.items():
            print(
                f"{key:<{width}}  {value:,}"
                if isinstance(value, int) and not isinstance(value, bool)
                else f"{key:<{width}}  {value}"
            )
        return 0
    names = builtin_model_names()
    models = [get_model(n) for n in names]
    if args.json:
        print_json([{**m.to_dict(), "catalog": catalog_entry(n)} for n, m in zip(names, models)])
        return 0

    def kind(m) -> str:
        parts = [f"MoE {m.n_active_experts}/{m.n_experts}" if m.is_moe else "dense"]
        parts += ["MLA"] if m.is_mla else []
        parts += [f"window {m.sliding_window}"] if m.n_sliding_layers else []
        return ", ".join(parts)

    def draft(name: str) -> str:
        named = catalog_draft(name)
        return "(preset)" if named is None else named

    dtype = lambda m: m.weight_dtype if m.expert_dtype_ == m.weight_dtype else f"{m.weight_dtype}/{m.expert_dtype_}"  # noqa: E731
    print(
        table(
            ["name", "params", "active", "kind", "layers", "heads/kv", "weights", "weights GB", "KV kB/token", "draft"],
            [
                [
                    m.name,
                    format_count(m.params),
                    format_count(m.active_params),
                    kind(m),
                    m.n_layers,
                    f"{m.n_heads}/{m.n_kv_heads}",
                    dtype(m),
                    f"{m.weight_bytes / 1e9:.1f}",
                    f"{m.kv_bytes_per_token / 1e3:.1f}",
                    draft(n),
                ]
                for n, m in zip(names, models)
            ],
            "<>><>><>><",
        )
    )
    print(
        "\nshow one (with its source and published size): specsim models show NAME; use your own: --target path/to/config.json"
    )
    return 0


def run_reproduce(args: argparse.Namespace) -> int:
    from specsim.article.reproduce import article_preset, reproduce

    checks = reproduce()
    preset = article_preset()
    if args.json:
        print_json({"preset": preset, "checks": [c.to_dict() for c in checks]})
    else:
        print(
            f"the article's numbers from its preset: {preset['hardware']} ({preset['peak_flop_per_s'] / 1e12:g} TFLOP/s "
            f"x {preset['compute_eff']:g}, {preset['peak_bytes_per_s'] / 1e12:g} TB/s x {preset['bandwidth_eff']:g}, "
            f"{preset['overhead_s_per_pass'] * 1e3:g} ms/pass, {preset['timing']} step times),"
        )
        print(f"{preset['target']} target, {preset['draft']} draft, context {preset['context_tokens']} tokens")
        if args.verbose:
            print(
                f"source: {preset['source']}; engine preset {preset['engine']} (no engine's iteration or round terms)"
            )
        print()
        print(
            table(
                ["quantity", "quoted", "specsim", "must land in", "result"],
                [
                    [
                        c.quantity,
                        c.quoted,
                        f"{c.value:.4f} {c.unit}".strip(),
                        c.interval,
                        "pass" if c.passed else "FAIL",
                    ]
                    for c in checks
                ],
                "<<><<",
            )
        )
        failed = sum(not c.passed for c in checks)
        print(f"\n{len(checks) - failed}/{len(checks)} pass")
    return 0 if all(c.passed for c in checks) else 1


def run_figures(args: argparse.Namespace) -> int:
    import time

    from specsim.figures.make import FIGURES, make_all

    if args.list:
        if args.only is not None:  # it would be ignored: list everything, or make the named ones
            raise ValueError("--list lists every figure; --only names the ones to make: give one of them")
        if args.json:
            print_json([spec.name for spec in FIGURES])
        else:
            for spec in FIGURES:
                print(spec.name)
        return 0
    start = time.perf_counter()
    from specsim.cli.report import progress_bar

    count = len(FIGURES) if args.only is None else len(args.only)
    with progress_bar("figures", "figure", total=count, quiet=args.json) as done:
        paths = make_all(args.out, args.only, done)
    elapsed = time.perf_counter() - start
    if args.json:
        print_json([str(p) for p in paths])
    else:
        for path in paths:
            print(path)
    print(f"{len(paths)} files in {elapsed:.1f} s", file=sys.stderr)
    return 0


def run_alpha(args: argparse.Namespace) -> int:
    from specsim.speculation.acceptance import alpha_from_acceptance_length

    if args.metrics is not None:
        if args.acceptance_length is not None:
            raise ValueError("give either --metrics FILE or --acceptance-length X with --gamma G, not both")
        return _alpha_from_metrics(args)
    if args.acceptance_length is None or args.gamma is None:
        raise ValueError("give --acceptance-length X and --gamma G (the gamma the measurement used), or --metrics FILE")
    alpha = float(alpha_from_acceptance_length(args.acceptance_length, args.gamma))
    source = getattr(args, "alpha_source", "--acceptance-length")  # a page's, where one gave it
    if args.json:
        page = {} if source == "--acceptance-length" else {"source": source}
        print_json({"alpha": alpha, "acceptance_length": args.acceptance_length, "gamma": args.gamma} | page)
    else:
        print(
            f"alpha = {alpha:.4f}  (mean acceptance length {args.acceptance_length:g} at gamma {args.gamma}"
            + (f"; {source})" if source != "--acceptance-length" else ")")
        )
    return 0


def _alpha_from_metrics(args: argparse.Namespace) -> int:
    from specsim.speculation.metrics import read_page

    m = read_page(args.metrics, args.model_name)
    if isinstance(m, float):  # SGLang's page holds the mean accept length alone: its steps come from --gamma
        length = m
        if args.gamma is None:
            raise ValueError(
                f"{args.metrics} is an SGLang page: its mean accept length is {length:.4g} tokens a verification, and "
                "SGLang does not say the steps; give --gamma, the --speculative-num-steps it ran with"
            )
        args.acceptance_length, args.alpha_source = length, f"{args.metrics}: SGLang mean accept length"
        args.metrics = None
        return run_alpha(args)
    if args.gamma is not None and m.gamma is not None and args.gamma != m.gamma:  # taken from the page, not dropped
        raise ValueError(
            f"--gamma {args.gamma} but {args.metrics}'s drafts are of gamma {m.gamma} (drafted tokens per draft): "
            "the page says it; drop --gamma"
        )
    if args.gamma is not None and m.gamma is None:
        raise ValueError(
            f"--gamma {args.gamma} but {args.metrics}'s drafts vary in length ({m.mean_draft_length:.2f} drafted tokens "
            "a draft on average: a dynamic schedule), which no one gamma describes; drop --gamma"
        )
    out = m.to_dict()
    if args.json:
        print_json(out)
        return 0
    far = out["positions_far_from_alpha"]
    if m.gamma is None:
        print(
            f"{args.metrics}: {m.drafts:,.0f} drafts with {m.mean_draft_length:.2f} drafted tokens each on average (gamma varied: "
            f"a dynamic schedule), {m.accepted_tokens:,.0f} of {m.draft_tokens:,.0f} drafted tokens accepted ({m.acceptance_rate:.1%})"
        )
        print(
            f"mean acceptance length {m.mean_acceptance_length:.4f} tokens per target pass; alpha is not identifiable from "
            "counters that mix draft lengths: measure at a fixed gamma (num_speculative_tokens without a schedule)"
        )
    else:
        print(
            f"{args.metrics}: {m.drafts:,.0f} drafts of gamma = {m.gamma}, {m.accepted_tokens:,.0f} of {m.draft_tokens:,.0f} drafted tokens accepted"
        )
        print(
            f"mean acceptance length {m.mean_acceptance_length:.4f} tokens per target pass; implied alpha = {m.alpha:.4f}"
        )
    if m.accepted_per_position and m.gamma is not None:
        print()
        rows = []
        for k, (c, a) in enumerate(zip(out["per_position_cumulative"], out["per_position_conditional"])):
            rows.append(
                [
                    k,
                    f"{c:.4f}",
                    "undefined (no draft reached it)" if a is None else f"{a:.4f}",
                    f"{m.alpha ** (k + 1):.4f} / {m.alpha:.4f}",
                ]
            )
        print(
            table(
                [
                    "position",
                    "P(accepted so far)",
                    "P(accepted | previous accepted)",
                    "one-alpha model: alpha^(k+1) / alpha",
                ],
                rows,
                ">>><",
            )
        )
    if far:
        print(
            f"\nwarning: the acceptance rate at position(s) {', '.join(map(str, far))} differs from alpha by more than "
            "0.05 and more than sampling noise (4 standard errors; smaller departures are not named): acceptance is "
            "not independent per position.  For gamma <= "
            f"{m.gamma}, use the per-position rates (E = 1 + sum of P(accepted so far)) rather than one alpha.",
            file=sys.stderr,
        )
    return 0


# -- flags: each command's own, declared beside its handler --------------------------------------------------
def _parser_toy(sub) -> None:
    p = sub.add_parser(
        "toy", help="the article's seeded toy experiments: exactness, tokens per step, draft re-alignment"
    )
    p.add_argument("experiment", choices=["exactness", "tokens-per-step", "distill"])
    p.add_argument("--seed", type=int_at_least(0, "seed", MAX_SEED), default=0, help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_toy)


def _parser_acceptance(sub) -> None:
    p = sub.add_parser(
        "acceptance",
        help="alpha measured from target and draft logits at a temperature",
        description="Read two [positions, vocab] logit arrays (.npy or .npz) over the same positions and "
        "vocabulary; print alpha = mean sum min(p, q), its spread and tokens per step for gamma 1..8.",
    )
    p.add_argument("--target-logits", required=True, help=".npy or .npz file, shape [positions, vocab]")
    p.add_argument("--draft-logits", required=True, help=".npy or .npz file, same shape")
    p.add_argument("--temperature", type=nonneg_number, default=1.0, help="serving temperature (0 = greedy; default 1)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_acceptance)


def _parser_hardware(sub) -> None:
    p = sub.add_parser("hardware", help="list hardware profiles, or show one")
    p.add_argument("action", nargs="?", choices=["show"], help="show one profile")
    p.add_argument("name", nargs="?", help="profile name or YAML path (with show)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_hardware)


def _parser_engines(sub) -> None:
    p = sub.add_parser(
        "engines",
        help="list engine presets (what --engine takes), or show one",
        description="Each preset covers a span of an engine's releases that run a speculative round alike: its engine "
        "time per iteration and per collective, the host time a round adds, what it overlaps, the drafters the engine "
        "takes, and the public measurements each term comes from.",
    )
    p.add_argument("action", nargs="?", choices=["show"], help="show one preset")
    p.add_argument("name", nargs="?", help="with show: what --engine takes (vllm@0.24.0, sglang, trtllm@latest)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_engines)


def _parser_models(sub) -> None:
    p = sub.add_parser("models", help="list built-in model shapes, or show one")
    p.add_argument("action", nargs="?", choices=["show"], help="show one model")
    p.add_argument("name", nargs="?", help="model name or config.json path (with show)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_models)


def _parser_figures(sub) -> None:
    p = sub.add_parser("figures", help="regenerate every figure (PNG and SVG) with fixed file names")
    p.add_argument(
        "--out",
        type=nonempty("out", "folder"),
        default="figures",
        help="output folder, created if missing (default: figures)",
    )
    p.add_argument("--only", type=names("only"), help="comma-separated figure names (see --list)")
    p.add_argument("--list", action="store_true", help="list the figure names and exit")
    p.add_argument("--json", action="store_true", help="print JSON (the files written, or with --list the names)")
    p.set_defaults(func=run_figures)


def _parser_reproduce(sub) -> None:
    p = sub.add_parser(
        "reproduce", help="recompute every number the reference article quotes; exit 0 only if all match"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_reproduce)


def _parser_alpha(sub) -> None:
    p = sub.add_parser(
        "alpha",
        help="alpha from a measured mean acceptance length or a saved vLLM /metrics page",
        description="Invert E(alpha, gamma): vLLM's mean acceptance length is 1 + accepted/drafts. "
        "With --metrics, read vLLM's spec_decode counters and per-position acceptance.",
    )
    p.add_argument("--acceptance-length", type=number, help="mean tokens per verification pass, in [1, gamma+1]")
    p.add_argument(
        "--gamma", type=int_at_least(1, "gamma", MAX_GAMMA), help="speculative tokens per step of the measurement"
    )
    p.add_argument("--metrics", help="a saved Prometheus /metrics page of a vLLM server")
    p.add_argument("--model-name", help="with --metrics: the model_name label to read, if several")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_alpha)


#: The commands of this module, each with the function that declares its flags.
PARSERS = {
    "toy": _parser_toy,
    "acceptance": _parser_acceptance,
    "alpha": _parser_alpha,
    "hardware": _parser_hardware,
    "engines": _parser_engines,
    "models": _parser_models,
    "figures": _parser_figures,
    "reproduce": _parser_reproduce,
}

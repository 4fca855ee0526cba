"""What a watch gives the rest of a monitoring stack: specsim's own gauges for Prometheus to scrape, alerting rules
for the same verdicts, and a Grafana dashboard.

The gauges (:class:`Gauges`, a prometheus_client registry of their own, served by its ``start_http_server``) carry
the last window's acceptance length and interval, the break-even, the model's speedup, the load and one 0/1 series
per verdict.  :func:`alert_rules` writes two groups: alerts on those gauges (the watch's own verdicts, exactly), and
rules on the engine's metrics alone, for a deployment where specsim does not run beside Prometheus: the acceptance
length as the engine's release counts it, the break-even as a step function of the request rate (the serving model's,
tabulated at the given lengths and draft length), and a drop of ``min_drop`` against the day before (a rule of thumb,
not the watch's change-point test: said in its annotation).  :func:`dashboard` is a Grafana dashboard of both.
:func:`rules_answer` is ``watch --alert-rules/--dashboard``'s answer: both, their files' text and the record ``--json``
prints (:class:`RulesAnswer`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Gauges",
    "RulesAnswer",
    "alert_rules",
    "break_even_table",
    "break_even_tables",
    "dashboard",
    "engine_queries",
    "rules_answer",
    "rules_max_rate",
]

_PREFIX = "specsim_watch_"


class Gauges:
    """specsim's gauges of one watched model, in a registry of their own."""

    def __init__(self, model: str, engine: str, deployment: str, error=None):
        from prometheus_client import CollectorRegistry, Gauge, Info

        self.registry = CollectorRegistry(auto_describe=True)
        self.model = model
        labels = ["model_name"]

        def gauge(name, doc, extra=()):
            return Gauge(_PREFIX + name, doc, labels + list(extra), registry=self.registry)

        self.length = gauge("acceptance_length", "Tokens per verification in the last window (1 + accepted / drafts)")
        self.low = gauge("acceptance_length_low", "Bottom of the last window's 95% interval of the acceptance length")
        self.high = gauge("acceptance_length_high", "Top of the last window's 95% interval of the acceptance length")
        self.break_even = gauge(
            "break_even_acceptance_length",
            "Acceptance length at which speculation breaks even at the "
            "last window's load (the serving model's; NaN where none pays or any does)",
        )
        self.speedup = gauge(
            "predicted_speedup", "Plain TPOT over speculative TPOT at the last window's load and acceptance"
        )
        self.rate = gauge("request_rate", "Finished requests per second per replica in the last window")
        self.running = gauge("running", "Mean requests running per replica in the last window")
        self.best_gamma = gauge("best_gamma", "The draft length the model picks at the last window's load (0: none)")
        self.verdict = gauge(
            "verdict",
            "1 while a verdict holds: costs (speculation costs more than it saves, beyond the model's error), dropped "
            "(acceptance dropped), schedule (another draft length is better)",
            ["verdict"],
        )
        self.window_end = gauge("window_end_seconds", "Unix time of the last window's end")
        # The verdicts' threshold and where it comes from (``error``, a ModelError, as the answers carry it): a
        # window is judged "costs" below the acceptance where the model's speedup is 1 less it.
        said = {} if error is None else {"model_error": error.shown, "model_error_basis": error.basis}
        Info(
            _PREFIX + "build", "What the watch models and the error its verdicts allow", labels, registry=self.registry
        ).labels(model).info({"engine": engine, "deployment": deployment} | said)
        for kind in ("costs", "dropped", "schedule"):
            self.verdict.labels(model, kind).set(0)

    def update(self, row) -> None:
        """Set every gauge from a :class:`~.watcher.Row` (a window with no judgement sets the verdicts only)."""
        m, w, j = self.model, row.window, row.judgement
        for kind in ("costs", "dropped", "schedule"):
            self.verdict.labels(m, kind).set(1 if kind in row.holding else 0)
        self.window_end.labels(m).set(w.end_s)
        if j is None:
            return
        self.length.labels(m).set(w.acceptance_length)
        low, high = j.interval if j.interval else (float("nan"), float("nan"))
        self.low.labels(m).set(low)
        self.high.labels(m).set(high)
        self.break_even.labels(m).set(j.break_even_length if j.break_even_length is not None else float("nan"))
        self.speedup.labels(m).set(j.speedup)
        self.rate.labels(m).set(w.requests_per_s)
        if w.running is not None:
            self.running.labels(m).set(w.running)
        self.best_gamma.labels(m).set(j.best_gamma)

    def serve(self, host: str, port: int):
        """Serve the gauges on http://host:port/metrics (a daemon thread); the server, for shutting down."""
        from prometheus_client import start_http_server

        server, _ = start_http_server(port, addr=host, registry=self.registry)
        return server


def engine_queries(names, window: str = "5m", selector: str = "") -> dict:
    """PromQL of the acceptance length and the request rate per replica of each model, as ``names``'s release counts
    them (the same basis as :func:`~.windows.window_between`)."""

    def sel(name, extra=""):
        inner = ",".join(filter(None, [selector, extra]))
        return f"{name}{{{inner}}}" if inner else name

    by = f"sum by ({names.model_label})"
    if names.drafts is not None:
        length = f"1 + {by} (rate({sel(names.accepted)}[{window}])) / {by} (rate({sel(names.drafts)}[{window}]))"
    elif names.drafted_per_position is not None:
        first = f'{names.position_label}="0"'
        length = (
            f"1 + {by} (rate({sel(names.accepted_per_position)}[{window}])) / "
            f"{by} (rate({sel(names.drafted_per_position, first)}[{window}]))"
        )
    elif names.verify_calls is not None:
        length = (
            f"({by} (rate({sel(names.generation_tokens)}[{window}])) - {by} (rate({sel(names.requests)}[{window}]))) / "
            f"{by} (rate({sel(names.verify_calls)}[{window}]))"
        )
    else:
        length = f"avg by ({names.model_label}) (avg_over_time({sel(names.accept_length_gauge)}[{window}]))"
    replicas = (
        f"count by ({names.model_label}) (count by ({names.model_label}, {names.replica_label}) ({sel(names.running)}))"
        if names.replica_label
        else "1"
    )
    rate = (
        f"{by} (rate({sel(names.requests)}[{window}])) / {replicas}"
        if names.replica_label
        else f"{by} (rate({sel(names.requests)}[{window}]))"
    )
    queries = {
        "acceptance_length": length,
        "request_rate": rate,
        "running": f"avg by ({names.model_label}) ({sel(names.running)})",
    }
    if names.accepted_per_position is not None:
        base = (
            sel(names.drafts)
            if names.drafts is not None
            else sel(names.drafted_per_position, f'{names.position_label}="0"')
        )
        queries["per_position"] = (
            f"sum by ({names.model_label}, {names.position_label}) (rate({sel(names.accepted_per_position)}[{window}])) "
            f"/ ignoring({names.position_label}) group_left sum by ({names.model_label}) (rate({base}[{window}]))"
        )
    return queries


def break_even_table(
    judge,
    gamma: int,
    input_tokens: float,
    output_tokens: float,
    max_rate: float,
    points: int = 24,
    threshold: str = "break_even",
) -> list:
    """[(request rate per replica, acceptance length or None, how)] on a grid of rates up to ``max_rate``: the
    break-even (``threshold`` "break_even": the speedup 1) or where the watch's "costs" verdict starts ("costs_below":
    the speedup 1 less the model's error, the judge's ``error``), as :class:`~.judge.Judgement`
    gives them."""
    return break_even_tables(judge, gamma, input_tokens, output_tokens, max_rate, points)[threshold]


def break_even_tables(
    judge, gamma: int, input_tokens: float, output_tokens: float, max_rate: float, points: int = 24
) -> dict:
    """:func:`break_even_table`'s tables by ``threshold`` ("break_even", "costs_below"), from one judgement of the grid
    of rates: the rules take both, and judging the same windows twice doubled their time.  The thresholds alone
    (:meth:`~.judge.Judge.thresholds`): the speedup at each window's made-up acceptance, no part of a table, took a
    fifth of it."""
    from specsim.watch.windows import Window

    rates = np.unique(np.round(np.geomspace(max_rate / 64.0, max_rate, points), 4))
    windows = [
        Window(
            0.0,
            60.0,
            "",
            1,
            "",
            drafts=None,
            acceptance_length=1.0 + gamma / 2.0,
            gamma=gamma,
            requests_per_s=float(r),
            input_tokens=float(input_tokens),
            output_tokens=float(output_tokens),
        )
        for r in rates
    ]
    judged = judge.thresholds(windows)
    return {
        "break_even": [(float(r), *one) for r, (one, _, _) in zip(rates, judged)],
        "costs_below": [(float(r), *below) for r, (_, _, below) in zip(rates, judged)],
    }


def _step_function(table: list, rate: str, top: float) -> str:
    """PromQL of the break-even as a step function of ``rate``: each row's value from its rate up (``top`` where none
    pays: above any acceptance length the engine can show; 1 where any does)."""
    values = [(r, top if how == "never" else (1.0 if how == "always" else v)) for r, v, how in table]
    expr = f"{values[0][1]:.4f}"
    for (r_prev, v_prev), (r, v) in zip(values[:-1], values[1:]):
        if abs(v - v_prev) > 1e-6:
            expr += f" + {v - v_prev:+.4f} * ({rate} >= bool {r:.4g})".replace("+ +", "+ ").replace("+ -", "- ")
    return expr


def rules_max_rate(judge, input_tokens: float, output_tokens: float) -> float:
    """The top request rate per replica :func:`alert_rules` tabulates the break-even up to, requests/s: 1.5 times what
    the plain engine serves with ``judge``'s max_num_seqs users in a closed loop (past its capacity; the users its KV
    cache holds where that is fewer)."""
    users = float(judge.limits.max_num_seqs)
    plain = judge.state(0.0, [0], [users], input_tokens, output_tokens, 1, "concurrency")
    return float(plain.requests_per_s[0, 0]) * 1.5


def alert_rules(
    names,
    judge,
    gamma: int,
    input_tokens: float,
    output_tokens: float,
    max_rate: float,
    *,
    selector: str = "",
    min_drop: float = 0.05,
    interval_s: float = 60.0,
    provenance: str = "",
) -> dict:
    """The rules file (a dict for YAML): the watch's verdicts on specsim's gauges, and the engine-only rules."""
    q = engine_queries(names, "5m", selector)
    tables = break_even_tables(judge, gamma, input_tokens, output_tokens, max_rate)
    table = tables["break_even"]
    label = names.model_label
    rate_rule, length_rule, be_rule = (
        "specsim:request_rate:rate5m",
        "specsim:acceptance_length:rate5m",
        "specsim:break_even_acceptance_length",
    )
    # The engine-only alert fires where the watch's "costs" verdict would: below the acceptance where the model's
    # speedup is 1 less its error (the break-even recorded beside it is the speedup 1, for the dashboard).
    error, top = judge.error, float(gamma + 2)
    costs = _step_function(tables["costs_below"], rate_rule, top)
    hold = f"{int(max(2 * interval_s, 60))}s"
    watch = [
        {
            "alert": "SpeculationCostsMoreThanItSaves",
            "expr": f'{_PREFIX}verdict{{verdict="costs"}} == 1',
            "for": hold,
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "Speculative decoding costs more than it saves at this load ({{ $labels.%s }})" % label,
                "description": "specsim watch: the acceptance length's 95% interval is below the acceptance where "
                "the model's speedup at the running load is 1 less its error (specsim_watch_build_info's model_error); "
                + provenance,
            },
        },
        {
            "alert": "SpeculativeAcceptanceDropped",
            "expr": f'{_PREFIX}verdict{{verdict="dropped"}} == 1',
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "Speculative acceptance dropped ({{ $labels.%s }})" % label,
                "description": "specsim watch's change-point test flagged a drop of the acceptance length "
                "(at most one false alarm per 1,000 windows without a change)",
            },
        },
        {
            "alert": "SpeculationScheduleStale",
            "expr": f'{_PREFIX}verdict{{verdict="schedule"}} == 1',
            "for": hold,
            "labels": {"severity": "info"},
            "annotations": {
                "summary": "Another draft length is better at this load ({{ $labels.%s }})" % label,
                "description": "specsim watch prints the schedule in the engine's format",
            },
        },
    ]
    engine = [
        {"record": length_rule, "expr": q["acceptance_length"]},
        {"record": rate_rule, "expr": q["request_rate"]},
        {
            "record": be_rule,
            "expr": _step_function(table, rate_rule, top),
            "labels": {"specsim_lengths": f"{input_tokens:.0f}/{output_tokens:.0f}", "specsim_gamma": str(gamma)},
        },
        {
            "alert": "SpeculationCostsMoreThanItSavesEngineOnly",
            # (a step function with no step is a number, which takes no vector matching)
            "expr": f"{length_rule} < " + (f"({costs})" if rate_rule in costs else costs),
            "for": "10m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "Acceptance length below where speculation costs more than it saves at this request rate, "
                "beyond the model's error ({{ $labels.%s }})" % label,
                "description": (
                    f"the acceptance length where the model's speedup is 1 less its error of {error.shown} "
                    f"({error.short}), tabulated by specsim for {input_tokens:.0f}-token prompts, "
                    f"{output_tokens:.0f}-token outputs and gamma {gamma}; {provenance}. "
                    f"{top:g} marks a load where no acceptance comes within the error of paying"
                ),
            },
        },
        {
            "alert": "SpeculativeAcceptanceDroppedEngineOnly",
            "expr": f"{length_rule} < {1 - min_drop:g} * ({length_rule} offset 1d)",
            "for": "30m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": 'Acceptance length {{ $value | printf "%.2f" }} is more than '
                f"{min_drop:.0%} below the same hour yesterday",
                "description": "a rule of thumb against the day before, not specsim watch's change-point test",
            },
        },
    ]
    return {
        "groups": [
            {"name": "specsim-watch", "rules": watch},
            {"name": "specsim-engine", "interval": "1m", "rules": engine},
        ]
    }


def dashboard(names, model_hint: str = "", selector: str = "") -> dict:
    """A Grafana dashboard (schema 39) of acceptance by position, load and the break-even line, for ``names``'s release
    and specsim's gauges."""
    q = engine_queries(names, "$__rate_interval", selector)

    def panel(pid, title, targets, y, unit="none", thresholds=None):
        p = {
            "id": pid,
            "type": "timeseries",
            "title": title,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": 12, "x": 0 if pid % 2 else 12, "y": y},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [
                {"refId": chr(65 + k), "expr": expr, "legendFormat": legend} for k, (expr, legend) in enumerate(targets)
            ],
        }
        if thresholds:
            p["fieldConfig"]["defaults"]["thresholds"] = {"mode": "absolute", "steps": thresholds}
            p["fieldConfig"]["defaults"]["custom"] = {"thresholdsStyle": {"mode": "line"}}
        return p

    label = "{{%s}}" % names.model_label
    panels = [
        panel(
            1,
            "Acceptance length and break-even",
            [
                (q["acceptance_length"], f"acceptance length {label}"),
                ("specsim:break_even_acceptance_length", "break-even (specsim rules)"),
                (f"{_PREFIX}acceptance_length", f"acceptance length, specsim watch {label}"),
                (f"{_PREFIX}break_even_acceptance_length", f"break-even, specsim watch {label}"),
            ],
            0,
        ),
        panel(
            2,
            "Acceptance by draft position",
            [(q["per_position"], "position {{%s}}" % names.position_label)]
            if "per_position" in q
            else [(q["acceptance_length"], f"acceptance length {label}")],
            0,
            "percentunit",
        ),
        panel(
            3, "Load per replica", [(q["request_rate"], f"requests/s {label}"), (q["running"], f"running {label}")], 8
        ),
        panel(
            4,
            "Model speedup at the running load",
            [(f"{_PREFIX}predicted_speedup", f"speedup {label}")],
            8,
            "none",
            [{"color": "red", "value": None}, {"color": "green", "value": 1}],
        ),
        panel(5, "Verdicts", [(f"{_PREFIX}verdict", "{{verdict}} " + label)], 16),
    ]
    return {
        "title": f"specsim watch: speculative decoding ({names.releases}{', ' + model_hint if model_hint else ''})",
        "uid": "specsim-watch",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "time": {"from": "now-24h", "to": "now"},
        "refresh": "1m",
        "tags": ["specsim", "speculative-decoding"],
        "templating": {
            "list": [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"}]
        },
        "panels": panels,
    }


def to_json(obj: dict) -> str:
    return json.dumps(obj, indent=2) + "\n"


@dataclass(frozen=True)
class RulesAnswer:
    """``watch --alert-rules/--dashboard``: the rules file (:func:`alert_rules`) and the dashboard (:func:`dashboard`),
    each None where not asked for, and what the rules' break-even was tabulated at: the draft length and the requests
    (every request ``input_tokens`` in, ``output_tokens`` out, as ``requests`` says them, defaults cited)."""

    deployment: object  #: the Deployment whose serving model the break-even is of
    gamma: int
    input_tokens: int
    output_tokens: int
    requests: str  #: the requests in words (their description, :func:`specsim.answers.load.request_lengths`)
    rules: dict | None
    dashboard: dict | None

    def rules_text(self) -> str:
        """The rules file, as YAML (keys in their order)."""
        import yaml

        return yaml.safe_dump(self.rules, sort_keys=False, width=1000, allow_unicode=True)

    def dashboard_text(self) -> str:
        """The dashboard, as JSON."""
        return to_json(self.dashboard)

    def to_dict(self, written: list) -> dict:
        """What ``specsim watch --alert-rules/--dashboard --json`` prints where no source is watched: the files
        ``written`` (their paths, as given), the draft length and requests the break-even was tabulated at, and the
        sources of every number (``provenance``, ``deployment``)."""
        return {
            "written": [str(path) for path in written],
            "gamma": self.gamma,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "requests": self.requests,
            "provenance": self.deployment.provenance(),
            "deployment": self.deployment.identity(),
        }


def rules_answer(
    names,
    judge,
    gamma: int,
    requests,
    *,
    rules: bool = True,
    with_dashboard: bool = False,
    selector: str = "",
    min_drop: float = 0.05,
    interval_s: float = 60.0,
) -> RulesAnswer:
    """The rules file (where ``rules``) and the dashboard (where ``with_dashboard``) for ``names``'s release, the
    break-even tabulated by ``judge`` (of its deployment) at draft length ``gamma`` for ``requests`` (fixed lengths,
    :func:`specsim.answers.load.request_lengths`, rounded to whole tokens; positions past the target's context
    refused, :func:`~specsim.answers.load.check_positions`) up to :func:`rules_max_rate`."""
    from specsim.answers.load import check_positions

    dep = judge.dep
    P, O = round(requests.input_tokens), round(requests.output_tokens)
    check_positions(dep, P, O)
    table = None
    if rules:
        top = rules_max_rate(judge, P, O)
        kw = {"selector": selector, "min_drop": min_drop, "interval_s": interval_s, "provenance": dep.brief()}
        table = alert_rules(names, judge, gamma, P, O, top, **kw)
    board = dashboard(names, selector=selector) if with_dashboard else None
    return RulesAnswer(dep, gamma, P, O, requests.description, table, board)

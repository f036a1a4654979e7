"""What a newcomer trips on in calc_inference_latency.py (issue 46, items 3, 5, 6 and 9's latency
parts): the trained-context warning on a "128k context" question, -o 0 and --prefix-tokens 0,
vllm bench serve's flag spellings, the line that says a simulated run was sent more than the
engine sustains, progress only for a person at a terminal, and the disaggregated table's columns.
Bookkeeping and wording checks: the numbers behind them are judged in test_serving_mix.py and
VALIDATION.md."""
import os

import pytest

import calc_inference_latency as cil
from conftest import json_main

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = os.path.join(HERE, "fixtures", "configs")
L8 = ["--hf_model_name_or_path", os.path.join(CFG, "llama-3.1-8b.json"), "--gpu", "h200"]


def run(argv):
    return json_main(cil.main, argv)


def test_a_128k_context_question_is_not_past_a_128k_model():
    # issue 46 item 3: -s 131072 warned "past the model's trained context" because the default -o
    # (128) was added to it; Llama-3.1-8B is trained to 131,072 (rope scaling, its config)
    assert run(L8 + ["-s", "131072"])["warnings"] == []
    said = run(L8 + ["-s", "131072", "-o", "100"])["warnings"]  # an -o given counts
    assert len(said) == 1 and "131,172 tokens is past the model's trained context" in said[0]


def test_o_0_is_the_prompts_pass_alone_and_refused_under_a_load(capsys):
    # issue 46 item 3: -o 0 was refused; with -b it asks for the prompt's pass alone (TTFT)
    r = run(L8 + ["-b", "1", "-s", "2000", "-o", "0"])
    one = run(L8 + ["-b", "1", "-s", "2000", "-o", "1"])
    assert r["ttft_s"] == one["ttft_s"] and r["output_tokens"] == 1
    with pytest.raises(SystemExit):
        cil.main(L8 + ["-c", "8", "-o", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "-o 0 under -c" in err[0] and "max_tokens" in err[0]


def test_prefix_tokens_0_is_no_shared_prefix():
    base = L8 + ["-s", "1000", "-o", "50", "--num-requests", "40", "--request-rate", "4"]
    assert run(base + ["--prefix-tokens", "0"])["serving"] == run(base)["serving"]


def test_vllm_bench_serves_spellings_are_aliases():
    # issue 46 item 9: `vllm bench serve --num-prompts N --max-concurrency C` (its rate defaults to
    # inf, so C clients each waiting for their answer: our -c closed loop)
    a = run(L8 + ["-s", "500", "-o", "50", "--num-prompts", "64", "--max-concurrency", "8"])
    b = run(L8 + ["-s", "500", "-o", "50", "--num-requests", "64", "-c", "8"])
    assert a["serving"] == b["serving"] and a["serving"]["num_requests"] == 64


def test_a_run_sent_more_than_the_engine_sustains_says_so(capsys):
    # issue 46 item 5: sent 6/s, served 4.53/s, TTFT 8.6 s and no line saying so; the steady state
    # refuses the same rate ("lower the rate or add GPUs")
    base = L8[:-1] + ["h100", "-s", "1000", "-o", "200", "--num-requests", "500"]
    with pytest.raises(SystemExit):
        cil.main(base[:-2] + ["--request-rate", "40"])  # the steady state: refused
    assert "lower the rate or add GPUs" in capsys.readouterr().err
    over = run(base + ["--request-rate", "40"])["serving"]
    assert over["overloaded"] and over["offered_requests_per_s"] == 40
    assert over["requests_per_s"] < over["sustained_requests_per_s"] < 40
    assert not run(base + ["--request-rate", "10"])["serving"]["overloaded"]
    cil.main(base + ["--request-rate", "40"])
    out = " ".join(capsys.readouterr().out.split())  # the line wraps at 100 characters
    assert "OVERLOAD: sent 40 requests/s, served " in out
    assert "lower the rate or add GPUs" in out


def test_progress_reaches_a_terminal_only(monkeypatch, capsys):
    # issue 46 item 6: progress on stderr for runs past a second, but never when stderr is a pipe
    # or a file, or under --json/--brief, so a failing run says one line
    import time
    from llmcalc.serve import simulate
    seen = []
    monkeypatch.setitem(simulate.SHOW_PROGRESS, "on", False)
    simulate.report_progress(seen.append, started=time.monotonic() - 1.0, done=10, n=20, units=1)
    assert seen == []
    monkeypatch.setitem(simulate.SHOW_PROGRESS, "on", True)
    simulate.report_progress(seen.append, started=time.monotonic() - 1.0, done=10, n=20, units=1)
    assert len(seen) == 1 and "10 of 20 requests done" in seen[0]
    # the tool turns it on for a terminal, off for --json, --brief and a pipe
    for tty, flags, on in ((True, [], True), (True, ["--json"], False), (True, ["--brief"], False),
                           (False, [], False)):
        monkeypatch.setattr(cil.sys.stderr, "isatty", lambda tty=tty: tty, raising=False)
        cil.main(L8 + ["-b", "1"] + flags)
        assert cil.SHOW_PROGRESS["on"] is on, (tty, flags)
    capsys.readouterr()


def test_the_disaggregated_tables_columns_hold_on_long_layouts(capsys):
    # issue 46 item 9: "P tp 1 dp 4 ep 4 x12 | D tp 1 dp 8 ep 8 x2 w8a8kv8" ran past the 34-wide
    # layout column and pushed its row's numbers out of their columns
    cil.main(["--hf_model_name_or_path", os.path.join(CFG, "mixtral-8x7b.json"), "--gpu", "h100",
              "--search", "--num-gpus", "64", "-s", "2000", "-o", "200", "--max-ttft-ms", "500",
              "--max-tpot-ms", "50", "--disaggregated"])
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("layout (per replica)"))
    rows = lines[head + 1:]
    rows = [r for r in rows[:next(i for i, x in enumerate(rows) if not x.strip())]
            if not r.startswith(("...", "("))]  # the "N more on the front" and key lines
    assert any(r.startswith("P ") for r in rows)
    ends = {len(lines[head])} | {len(r) for r in rows}
    assert len(ends) == 1, ends  # every row as wide as the header: the columns line up
    col = lines[head].index(" repl ") + len(" repl")
    assert all(r[col - 1].isdigit() and r[col] == " " for r in rows)


@pytest.mark.parametrize("dp,c", [(2, 1), (4, 3), (1000, 1), (3, 5)])
def test_a_closed_loop_never_runs_more_requests_than_its_clients(dp, c):
    # -c C is C clients in all (vLLM's --max-concurrency), however many data-parallel groups serve
    # them: with fewer clients than groups each group got one client (-dp 2 -c 1 ran 2 at once)
    sv = run(L8 + ["-dp", str(dp), "--num-requests", "10", "-c", str(c)])["serving"]
    assert sv["most_running"] <= c, sv["most_running"]


def test_a_dense_models_dp_groups_are_not_said_to_share_moe_layers():
    # Llama-3.1-8B has no routed experts: its -dp groups share nothing, so the mode line names no
    # MoE layers and no experts split over the GPUs
    mode = run(L8 + ["-dp", "2"])["mode"]
    assert "dp 2 = data-parallel" in mode and "MoE" not in mode and "experts" not in mode, mode

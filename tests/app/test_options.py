import pytest

from app.options import SAMPLE_DIR, OptionsError, parse_options


def test_no_arguments_open_the_bundled_samples():
    opts = parse_options([])
    assert opts.logs == (str(SAMPLE_DIR),) and opts.from_sample
    assert SAMPLE_DIR.name == "sample_rollouts"


def test_several_logs_format_plugins_refresh():
    opts = parse_options(["--log", "a", "--log", "b", "--format", "run", "--plugin", "m",
                          "--refresh", "0"])
    assert opts.logs == ("a", "b") and not opts.from_sample
    assert opts.format == "run" and opts.plugins == ("m",) and opts.refresh == 0


@pytest.mark.parametrize("argv", [["--bogus"], ["--refresh", "x"], ["--refresh", "-1"]])
def test_bad_arguments_raise_with_usage(argv):
    with pytest.raises(OptionsError, match="usage|refresh"):
        parse_options(argv)


def test_map_and_mapping_are_the_clis_own(tmp_path):
    mapping = tmp_path / "map.yaml"
    mapping.write_text("group_id: uid\nt: step\n")
    opts = parse_options(["--log", "x.csv", "--mapping", str(mapping), "--map", "t=turn"])
    assert opts.mapping == {"group_id": "uid", "t": "turn"}  # --map wins, as in the CLI
    assert dict(opts.read)["mapping"] == (("group_id", "uid"), ("t", "turn"))
    with pytest.raises(OptionsError, match="unknown step-table column"):
        parse_options(["--map", "nonsense=x"])
    with pytest.raises(OptionsError, match="mapping file not found"):
        parse_options(["--mapping", str(tmp_path / "nope.yaml")])
    opts = parse_options(["--state-regex", "Room: (.*)", "--trust-pickle"])
    assert dict(opts.read) == {"state_regex": "Room: (.*)", "trust_pickle": True}


def test_roots_and_bounds(tmp_path):
    opts = parse_options(["--allow-dir", str(tmp_path), "--max-rows", "10", "--cache-mb", "64"])
    assert opts.allow_dirs == (str(tmp_path),) and opts.max_rows == 10 and opts.cache_mb == 64
    defaults = parse_options([])
    assert defaults.allow_dirs == () and defaults.max_rows == 1_000_000
    for argv in (["--allow-dir", str(tmp_path / "nope")], ["--max-rows", "0"],
                 ["--cache-mb", "0"], ["--format", "bogus"]):
        with pytest.raises(OptionsError):
            parse_options(argv)


def test_outcome_rule_flags_reach_every_log_and_bad_ones_are_named():
    from app.data import LogRef

    options = parse_options(["--log", "x.csv", "--success-reward", "1", "--success-min", "0.5"])
    ref = LogRef(path="x.csv", name="x", format="csv", read=options.read)
    assert ref.open_kwargs()["outcome"] == {"success_reward": 1.0, "success_threshold": 0.5,
                                            "truncate_at": None}
    with pytest.raises(OptionsError, match="truncate_at"):
        parse_options(["--truncate-at", "0"])

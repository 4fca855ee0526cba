"""Hardware profiles: built-ins load, datasheet numbers, validation of user files."""

from __future__ import annotations

import dataclasses
import pathlib
import re

import pytest
import yaml

from specsim.describe.hardware import (
    HardwareProfile,
    builtin_dir,
    builtin_names,
    load_hardware,
    profile_from_mapping,
    profile_to_mapping,
)

REQUIRED_DEVICES = ["h100-sxm", "h100-pcie", "h200", "a100-sxm-80gb", "l40s", "l4", "b200", "mi300x"]


def test_required_devices_are_built_in():
    assert set(REQUIRED_DEVICES) <= set(builtin_names())


@pytest.mark.parametrize("name", REQUIRED_DEVICES)
def test_builtin_profile_cites_a_source_for_every_datasheet_number(name):
    hw = load_hardware(name)
    for key in ("peak_flop_per_s", "peak_bytes_per_s", "memory_bytes"):
        assert hw.sources.get(key, "").startswith("https://"), (name, key)
    if hw.peak_fp8_flop_per_s is not None:
        assert hw.sources["peak_fp8_flop_per_s"].startswith("https://")
    # The defaults are the article's preset until calibration replaces them, and say so.
    assert (hw.bandwidth_eff, hw.compute_eff, hw.overhead_s) == (0.8, 0.6, 0.5e-3)
    assert "article" in hw.notes


@pytest.mark.parametrize(
    "name, tflops, tbps, gb",
    [
        # Datasheet values (dense, no sparsity); URLs in each YAML file.
        ("h100-sxm", 989, 3.35, 80),
        ("h200", 989, 4.8, 141),
        ("a100-sxm-80gb", 312, 2.039, 80),
        ("mi300x", 1307.4, 5.3, 192),
    ],
)
def test_datasheet_numbers(name, tflops, tbps, gb):
    hw = load_hardware(name)
    assert hw.peak_flop_per_s == pytest.approx(tflops * 1e12)
    assert hw.peak_bytes_per_s == pytest.approx(tbps * 1e12)
    # Memory as the device reports it (nvidia-smi's total, within 0.5% of torch's, which gpu_memory_utilization is a
    # fraction of): a datasheet's "80 GB" or "141 GB" is a binary figure, 7% above the decimal reading.
    assert hw.memory_bytes == pytest.approx(gb * 2**30, rel=0.005) and hw.memory_bytes > 1.06 * gb * 1e9


def test_every_nvidia_profile_gives_its_compute_capability_with_its_source():
    """Engines pick attention backends by it (vLLM serves an FP8 cache on FlashInfer on sm 8.x and 12.x)."""
    expected = {"a100-sxm-80gb": (8, 0), "rtx-3090": (8, 6), "l40s": (8, 9), "h200": (9, 0), "b300": (10, 3)}
    expected |= {"rtx-5090": (12, 0), "h100-sxm-vllm": (9, 0)}
    for name in builtin_names():
        hw = load_hardware(name)
        if hw.platform != "cuda" or name == "cpu":
            assert hw.sm is None, name
            continue
        assert hw.sources["compute_capability"] == "https://developer.nvidia.com/cuda-gpus", name
        assert hw.sm == expected.get(name, hw.sm) and hw.sm[0] in (8, 9, 10, 12), name
    # Written unquoted, YAML reads it as a number: taken as NVIDIA writes it.
    data = {"name": "x", "peak_flop_per_s": 1e12, "peak_bytes_per_s": 1e12, "memory_bytes": 1e9}
    assert profile_from_mapping({**data, "compute_capability": 12}).compute_capability == "12.0"
    assert profile_from_mapping({**data, "compute_capability": 8.9}).sm == (8, 9)


def test_a100_has_no_fp8_and_h100_does():
    assert load_hardware("a100-sxm-80gb").peak_fp8_flop_per_s is None
    assert load_hardware("h100-sxm").peak_fp8_flop_per_s == pytest.approx(2 * 989.4e12, rel=1e-3)


def test_ridge_of_the_article_preset():
    # article-model.md: 0.6 * 989 / (0.8 * 3.35) = 221.4 FLOP/byte.
    assert load_hardware("h100-sxm").ridge_flop_per_byte == pytest.approx(221.418, abs=1e-3)


def test_pyyaml_exponent_strings_are_converted(tmp_path):
    # PyYAML reads 3.35e12 (no sign in the exponent) as a string.
    text = "name: mine\npeak_flop_per_s: 989e12\npeak_bytes_per_s: 3.35e12\nmemory_bytes: 80e9\n"
    assert isinstance(yaml.safe_load(text)["peak_bytes_per_s"], str)
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    hw = load_hardware(str(path))
    assert hw.peak_bytes_per_s == 3.35e12 and hw.peak_flop_per_s == 989e12


@pytest.mark.parametrize(
    "change, message",
    [
        ({"peak_bytes_per_s": "fast"}, "peak_bytes_per_s must be a number"),
        ({"peak_bytes_per_s": 0}, "peak_bytes_per_s must be > 0"),
        ({"peak_flop_per_s": -1e12}, "peak_flop_per_s must be > 0"),
        ({"bandwidth_eff": 1.5}, "bandwidth_eff must be in (0, 1]"),
        ({"compute_eff": 0}, "compute_eff must be in (0, 1]"),
        ({"overhead_s": -0.001}, "overhead_s must be in [0, 1] seconds"),
        ({"overhead_s": True}, "overhead_s must be a number"),
        ({"peak_flop_per_s": float("nan")}, "finite"),
        ({"bandwith_eff": 0.7}, "unknown key(s) bandwith_eff"),
        ({"memory_bytes": None}, "missing required key(s) memory_bytes"),
        ({"memory_bytes": 10**400}, "memory_bytes must be a finite number, got a 401-digit number"),
        ({"compute_capability": "sm_89"}, 'compute_capability must be major.minor as NVIDIA lists it, e.g. "8.9"'),
        ({"compute_capability": "8.9.1"}, "compute_capability must be major.minor"),
        ({"compute_capability": 8.95}, "compute_capability must be major.minor"),
        ({"compute_capability": "9.4", "platform": "rocm"}, "compute_capability is an NVIDIA GPU's"),
    ],
)
def test_bad_profiles_name_the_key_and_the_rule(change, message):
    data = {"name": "x", "peak_flop_per_s": 1e12, "peak_bytes_per_s": 1e12, "memory_bytes": 1e9, **change}
    with pytest.raises(ValueError) as err:
        profile_from_mapping(data, where="x.yaml")
    assert message in str(err.value) and "x.yaml" in str(err.value)


def test_unknown_name_names_the_nearest_profile_and_the_list():
    with pytest.raises(KeyError) as err:
        load_hardware("h100sxm")
    assert err.value.args[0].startswith("unknown hardware 'h100sxm'; did you mean h100-sxm? specsim hardware lists")
    # Built-in names in any case, as their aliases and the engines (issue 37: H200-SXM was taken, h100-SXM refused).
    assert load_hardware("H100-SXM").name == load_hardware("h100-SXM").name == "h100-sxm"


def test_invalid_yaml_names_the_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\npeak_flop_per_s: [1\n")
    with pytest.raises(ValueError, match="not valid YAML at line"):
        load_hardware(str(path))


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_hardware(str(tmp_path / "nope.yaml"))


def test_mapping_round_trip():
    hw = load_hardware("l40s")
    assert profile_from_mapping(profile_to_mapping(hw)) == hw


def test_profiles_are_frozen_and_replace_validates():
    hw = load_hardware("h100-sxm")
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.compute_eff = 0.9  # type: ignore[misc]
    with pytest.raises(ValueError, match="compute_eff"):
        dataclasses.replace(hw, compute_eff=2.0)


def test_per_layer_overhead_adds_per_layer():
    hw = HardwareProfile("x", 1e12, 1e12, 1e9, overhead_s=1e-4, per_layer_overhead_s=1e-5)
    assert hw.overhead_for(32) == pytest.approx(1e-4 + 32e-5)


def test_every_builtin_yaml_file_is_valid():
    for path in builtin_dir().glob("*.yaml"):
        assert load_hardware(str(path)).name == path.stem


def test_every_shipped_yaml_reads_the_same_with_the_fast_and_the_checked_reader():
    # load_yaml(shipped=True) skips the alias, duplicate-key and depth checks for the package's own files: they must
    # pass those checks and give the same data.
    from specsim.core.limits import load_yaml
    from specsim.describe.hardware import _builtin_files
    from specsim.describe.models import _CATALOG

    paths = list(_builtin_files().values()) + [_CATALOG / "index.yaml"]
    assert len(paths) > 10
    for path in paths:
        assert load_yaml(path, "shipped file", shipped=True) == load_yaml(path, "shipped file"), path


def test_a_users_yaml_reads_the_same_through_libyaml_as_through_pyyamls_own_parser(tmp_path):
    # load_yaml reads a user's file with libyaml's parser under the checked composer and constructor: every YAML file
    # of the tree gives what PyYAML's own parser gives, the checks' refusals included.
    from specsim.core.limits import _checked_yaml

    if not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML without libyaml")
    # The repository's own files (not a virtual environment's or another hidden folder's, which differ by machine)
    root = pathlib.Path(__file__).resolve().parents[1]
    paths = [
        p
        for p in root.rglob("*.y*ml")
        if p.suffix in (".yaml", ".yml") and not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]
    hostile = {
        "alias.yaml": "a: &x 1\nb: *x\n",
        "deep.yaml": "a:" + "".join("\n" + "  " * k + "- " for k in range(1, 20)) + "1\n",
        "duplicate.yaml": "a: 1\nb: 2\na: 3\n",
        "key.yaml": "? [a, b]\n: 1\n",
        "long-int.yaml": "a: " + "9" * 5000 + "\n",
    }
    for name, text in hostile.items():
        (tmp_path / name).write_text(text)
    assert len(paths) > 30
    for path in paths + sorted(tmp_path.iterdir()):
        text = path.read_text(encoding="utf-8")
        read = []
        for parser in (yaml.cyaml.CParser, None):
            try:
                read.append(_checked_yaml(text, "file", parser))
            except ValueError as err:
                read.append(str(err))
        assert read[0] == read[1], path


@pytest.mark.parametrize(
    "text, line",
    [
        ("name: x\ndescription: a\tb\n", 2),  # a tab inside a plain scalar
        ("runs:\n  - {file: a? b.jsonl}\n", 2),  # "?" inside a flow collection's plain scalar
        ("runs: [a, b?\nc]\n", 1),
        ("a:\n    - a\n\ufeff   - b\n", 4),  # a byte-order mark past the start
        ("notes: >#\n  a b\n", 1),  # a block scalar's header with a "#" at once after it
        ("notes: |-#\n  a\n", 1),
    ],
)
def test_what_pyyamls_own_parser_refuses_is_refused_where_libyaml_would_read_it(tmp_path, text, line):
    # libyaml reads these; the checked reader refused them before it read users' files with libyaml, and still does.
    from specsim.core.limits import load_yaml

    path = tmp_path / "odd.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=f"not valid YAML at line {line}$"):
        load_yaml(path, "calibration file")


def test_a_character_pyyaml_cannot_print_is_refused_before_an_alias_before_it_however_far(tmp_path):
    # PyYAML's reader refuses the whole text for it at once; libyaml reads 16 kB at a time and met the alias first.
    from specsim.core.limits import load_yaml

    path = tmp_path / "long.yaml"
    path.write_text("a: &x 1\nb: *x\n" + "".join(f"k{i}: {i}\n" for i in range(5000)) + "c: \x07\n")
    with pytest.raises(ValueError, match="long.yaml': not valid YAML$"):
        load_yaml(path, "calibration file")


def test_a_copy_of_a_builtin_profile_edited_under_its_name_is_refused_and_renamed_it_is_its_own(tmp_path):
    """A profile copied from hardware/ and edited kept the built-in's name and took that GPU's measured kernels and
    labels in silence (a copy of h100-sxm named h200 was timed with H200 kernels).  Edited under the name it is
    refused; as it ships it reads; renamed it is its own, and `device:` names the kernel data it reads."""
    from specsim.describe.hardware import load_hardware

    text = (builtin_dir() / "h100-sxm.yaml").read_text()
    same = tmp_path / "same.yaml"
    same.write_text(text)
    assert load_hardware(same) == load_hardware("h100-sxm")
    edited, renamed = _edited_and_renamed(tmp_path, text, r"(?m)^peak_bytes_per_s: .*$", "peak_bytes_per_s: 4.0e+12")
    with pytest.raises(ValueError, match=r"names itself h100-sxm, a built-in profile, but differs from it"):
        load_hardware(edited)
    profile = load_hardware(renamed)
    assert (profile.name, profile.device, profile.peak_bytes_per_s) == ("my-h100", "h100-sxm", 4.0e12)


def _edited_and_renamed(tmp_path, text: str, pattern: str, value: str):
    """(a built-in profile's ``text`` with one line edited, the edit renamed my-h100 reading h100-sxm's kernel data)."""
    edited, renamed = tmp_path / "edited.yaml", tmp_path / "renamed.yaml"
    edited.write_text(re.sub(pattern, value, text))
    renamed.write_text(re.sub(r"(?m)^name: .*$", "name: my-h100\ndevice: h100-sxm", edited.read_text()))
    return edited, renamed


def test_the_refusal_of_an_edited_calibrated_profile_names_the_kernel_data_it_reads(tmp_path):
    """A calibrated h100-sxm-vllm reads h100-sxm's kernels; the refusal of an edited copy advised `device:
    h100-sxm-vllm`, a device the kernel database does not have.  It names h100-sxm, and a copy renamed as advised
    reads the built-in's kernel folder."""
    from specsim.describe.hardware import load_hardware
    from specsim.timing.kernel_db import device_folder

    text = (builtin_dir() / "measurements" / "h100-sxm-vllm.yaml").read_text()
    edited, renamed = _edited_and_renamed(tmp_path, text, r"(?m)^compute_eff: .*$", "compute_eff: 0.5")
    with pytest.raises(ValueError, match=r"device: h100-sxm reads h100-sxm-vllm's kernel data under another name\)$"):
        load_hardware(edited)
    assert device_folder(load_hardware(renamed)) == device_folder(load_hardware("h100-sxm-vllm"))


def test_an_fp8_peak_below_the_16_bit_peak_is_refused(tmp_path):
    # 1e12 for 1979e12 gave a 30-second step and a ridge of 0.2 FLOP/byte, unsaid.
    from specsim.describe.hardware import load_hardware

    text = (builtin_dir() / "h100-sxm.yaml").read_text().replace("name: h100-sxm", "name: typo")
    bad = tmp_path / "typo.yaml"
    bad.write_text(re.sub(r"(?m)^peak_fp8_flop_per_s: [^#\n]*", "peak_fp8_flop_per_s: 1.0e+12 ", text))
    with pytest.raises(ValueError, match=r"peak_fp8_flop_per_s \(1e\+12\) is below peak_flop_per_s"):
        load_hardware(bad)

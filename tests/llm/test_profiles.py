"""The answer profiles (kiosk.llm.profiles): what llm.answer_profile may name, and a clear error for a typo."""

from __future__ import annotations

from typing import get_args

import pytest

from kiosk.config import LLMConfig
from kiosk.errors import ConfigError, DataError
from kiosk.llm.profiles import PROFILES, Step, answer_profile, profile_without


def test_the_setting_offers_exactly_the_defined_profiles_and_defaults_to_the_checked_one() -> None:
    assert set(get_args(LLMConfig.model_fields["answer_profile"].annotation)) == set(PROFILES)
    assert answer_profile(LLMConfig().answer_profile) is PROFILES["checked"]


def test_every_step_is_a_known_one_and_plain_takes_none() -> None:
    known = set(get_args(Step))
    assert all(set(profile.steps) <= known for profile in PROFILES.values())
    assert PROFILES["plain"].steps == ()
    assert set().union(*(profile.steps for profile in PROFILES.values())) == known  # no step left unreachable


def test_an_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"llm\.answer_profile") as raised:
        answer_profile("tiny")
    assert raised.value.hint == "use one of: small-model, careful, lists, checked, weighed, plain"


def test_steps_off_leave_only_steps_of_the_profile() -> None:
    profile = profile_without("lists", ("complete-lists",))
    assert not profile.has("complete-lists") and profile.has("cut-restatement")
    assert profile.name == "lists without complete-lists"
    assert profile_without("small-model", ()) == answer_profile("small-model")
    with pytest.raises(DataError, match="no step complete-lists"):
        profile_without("plain", ("complete-lists",))

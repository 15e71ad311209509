# pyright: standard
"""Whether a test ran: `TestStatus` with the reason when it did not, instead of a string callers parse.

summary.json keeps its text form, `TestOutcome.label`: "tested", or "no test: <reason>" (no test is no verdict,
never "not contaminated"); `TestOutcome.from_summary` reads it back, also from summaries written before the
`status` key existed.
"""

from __future__ import annotations

import dataclasses
import enum
import math

NO_TEST_PREFIX = "no test: "


class TestStatus(enum.Enum):
    __test__ = False  # a library class, not a pytest test class (a dunder name is no enum member)

    TESTED = "tested"
    NO_TEST = "no test"


@dataclasses.dataclass(frozen=True)
class TestOutcome:
    """A test's status; `reason` says why no test ran (None when it ran)."""

    __test__ = False

    status: TestStatus
    reason: str | None = None

    def __post_init__(self):
        if (self.status is TestStatus.NO_TEST) != (self.reason is not None):
            raise ValueError(f"{self.status}: a reason is given exactly when no test ran, got {self.reason!r}")

    @classmethod
    def tested(cls) -> TestOutcome:
        return cls(TestStatus.TESTED)

    @classmethod
    def no_test(cls, reason: str) -> TestOutcome:
        return cls(TestStatus.NO_TEST, reason)

    @property
    def ran(self) -> bool:
        return self.status is TestStatus.TESTED

    @property
    def label(self) -> str:
        """summary.json's text: "tested" or "no test: <reason>"."""
        if self.ran:
            return self.status.value
        assert self.reason is not None  # __post_init__: a reason exactly when no test ran
        return NO_TEST_PREFIX + self.reason

    @classmethod
    def from_label(cls, label: str) -> TestOutcome:
        if label == TestStatus.TESTED.value:
            return cls.tested()
        if label.startswith(NO_TEST_PREFIX):
            return cls.no_test(label[len(NO_TEST_PREFIX) :])
        raise ValueError(f"test status {label!r} is neither 'tested' nor 'no test: <reason>'")

    @classmethod
    def from_summary(cls, result: dict) -> TestOutcome:
        """The outcome of a summary.json test entry; one written before `status` existed is read from its p-value."""
        if result.get("status") is not None:
            return cls.from_label(result["status"])
        pvalue = result.get("pvalue")
        if isinstance(pvalue, (int, float)) and math.isfinite(pvalue):
            return cls.tested()
        return cls.no_test(result.get("power_note") or result.get("reason") or "no p-value")

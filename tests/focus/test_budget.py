"""crawler.focus.budget: slots claimed before a fetch, spent by a page result or given back."""

from __future__ import annotations

import asyncio

import pytest

from crawler.focus.budget import FetchBudget


async def test_claims_wait_for_a_slot_and_end_once_all_are_spent() -> None:
    budget = FetchBudget(2)
    assert await budget.claim() and await budget.claim()
    third = asyncio.create_task(budget.claim())
    await asyncio.sleep(0)
    assert not third.done()  # both slots held
    budget.settle(False)  # a retry: the slot comes back
    assert await third
    budget.settle(True)
    fourth = asyncio.create_task(budget.claim())
    await asyncio.sleep(0)
    assert not fourth.done()  # one slot held, one spent
    budget.settle(True)
    assert await fourth is False  # all spent: no more work
    assert budget.exhausted and (budget.spent, budget.held) == (2, 0)
    assert await budget.claim() is False


@pytest.mark.parametrize("limit", [0, -1, True, 1.5])
def test_a_budget_needs_a_positive_int(limit: object) -> None:
    with pytest.raises(ValueError, match="limit"):
        FetchBudget(limit)  # type: ignore[arg-type]


async def test_results_of_earlier_runs_count() -> None:
    budget = FetchBudget(3)
    budget.spend(2)
    assert await budget.claim()
    budget.settle(True)
    assert budget.exhausted and await budget.claim() is False

"""The `simtime` marker (tests/conftest.py): the test and its async fixtures run on
`crawler.testing.simtime.SimulatedLoop`; an unmarked test on the usual loop."""

from __future__ import annotations

import asyncio

import pytest

from crawler.testing.simtime import SimulatedLoop


@pytest.fixture
async def fixture_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


@pytest.mark.simtime
async def test_a_simtime_test_and_its_fixtures_run_in_simulated_time(
    fixture_loop: asyncio.AbstractEventLoop,
) -> None:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, SimulatedLoop) and fixture_loop is loop
    start = loop.time()
    await asyncio.gather(asyncio.sleep(30.0), asyncio.sleep(12.5))
    assert loop.time() - start == 30.0  # exactly: the clock jumped from timer to timer


async def test_an_unmarked_test_runs_on_the_usual_loop() -> None:
    assert not isinstance(asyncio.get_running_loop(), SimulatedLoop)

"""Choosing a task of LIBERO-PRO's position variants whose published file holds no initial
states (``libero_object_temp_y0.5`` task 1): the option error says the file is empty, not
"initial states 0..-1"."""

from __future__ import annotations

import pytest

from worlds.libero import libero_available

pytestmark = [
    pytest.mark.libero,
    pytest.mark.skipif(not libero_available(), reason="the LIBERO world needs the [libero] extra"),
]


def test_a_task_whose_published_file_holds_no_states_says_so() -> None:
    from embodiment.drivers import DriverOptionError
    from worlds.libero.env import check_choice

    with pytest.raises(DriverOptionError) as caught:
        check_choice("libero_object_temp_y0.5", 1, 0)
    assert "no initial states (its file is empty)" in str(caught.value)
    assert "0..-1" not in str(caught.value)
    assert check_choice("libero_object_temp_y0.5", 0, 0).n_init_states == 50

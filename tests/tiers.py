"""The two test tiers: which tests stay out of the fast one, and why.

``python -m pytest -m "not slow"`` is the fast tier a developer runs after every change:
every unit and property test, and nothing that starts a browser, a simulator (PyBullet's
tabletop and mobile worlds, MuJoCo's LIBERO), Ray or server processes, or waits for
timeouts to expire. ``python -m pytest`` runs everything (the README's and CI's command).
The robots' kinematic models (PyBullet or MuJoCo loading an arm's URDF or MJCF for the
safety envelope) are not simulators: the envelope's tests use them in the fast tier.

A test is ``slow`` (``tests/conftest.py`` marks it) when its file is in
:data:`SLOW_FILES` (what it starts), when it carries a marker of :data:`SLOW_MARKERS`
(``long``, ``libero``, ``sim``: a simulator episode or scene), or
when it is in :data:`SLOW_TESTS`: the example-based tests that took more than a second in
a measured run of the whole fast tier (``--durations=0`` on the shared 2-core machine;
end-to-end episodes in PyBullet, crash-and-resume subprocesses, timeouts that must
expire). Property tests (``@given``) stay in the fast tier whatever they take.
``tests/project/test_tiers.py`` checks that every name here still names a test.

Property tests run fewer examples in the fast tier: ``tests/conftest.py`` loads the
hypothesis profile :data:`FAST_PROFILE` when the ``-m`` expression leaves ``slow`` out
(and no ``--hypothesis-profile`` was given), :data:`FULL_PROFILE` otherwise. Each test
states its full-suite count as ``max_examples=examples(N)``; :func:`examples` gives ``N``
under the full profile and a tenth of it (at least :data:`FAST_MINIMUM`) in the fast
tier, and a test that states no count gets the profile's default (100, or 10). The
whole suite (``python -m pytest -n auto``, the README's and CI's command) therefore runs
every property test at its full count, and the fast tier searches the same space, less
deeply. A test that counts what a campaign of property tests did (calls tried, blocked)
states its floor as ``floor(N)``, scaled the same way, and an example-based test that
repeats one race states its rounds as ``repeats(N)``. Files in :data:`SLOW_FILES` are not
even imported in the fast tier (each of their tests would be deselected anyway; importing
them costs every worker the imports of Ray, Playwright and the servers' code).

Where the fast tier's time went before these two measures (``--durations=0``, 2 workers):
property tests about half of the time spent in tests, example-based tests most of the
rest (waits that must expire, e.g. the providers' cancel and timeout tests, are wall time,
not CPU), and collecting every test file about 9 s of CPU in each worker.

After them (December 2026, per-test CPU and main-thread waiting measured in each worker,
2 workers): property tests about 25 s of CPU, example-based tests about 44 s of CPU and
38 s of waiting spread over 1,640 tests, collection about 7.5 s of CPU per worker. The
simulator files, the loopback cancel tests and the tests over a second then left the
tier; what waits in it now is mostly thread hand-offs and short deadlines (the lease
races, the console's task loop), no test more than about 1.5 s.

Then (stop 51): the lease race runs one round of its five in the fast tier
(:func:`repeats`), and compiled bytecode is kept even where ``PYTHONDONTWRITEBYTECODE`` is
set (``tests/__init__.py``): with it set and no ``__pycache__``, each worker spent about
7 s of CPU before its first test, compiling the project, and 3 s once compiled. Paired
with the code before, alternating, 2 runs each on the shared machine at a load of 11-16:
whole-process CPU 88 and 95 s before, 75 and 85 s after; wall 172 and 173 s before, 125
and 144 s after (an idle machine's wall is a little over half the CPU: 58 s before).
In the whole suite, the Ray tests start one Ray, not two (the test that a local Ray is
its own reads the module's), and the world plugins' commands that fail before anything
runs are run in the test's process, not in a subprocess each.

Then (process starts): a ``harness`` command imports only its own module and what it uses
(docs/architecture.md, CLI), so every subprocess test starting the command pays less:
``--help`` 0.45 -> 0.05 s of CPU, ``runs`` 0.75 -> 0.44 s, ``run`` with a scripted model
0.99 -> 0.77 s. The world plugins' ``demo`` and ``check``, a demo from a folder that is
not a checkout, and ``test_fleet_eval``'s resume and physical-driver evals run in the
test's process. The nine files that start the most processes (the MCP servers, demos,
live export, plugins, CLI, console, fleet, secrets), each alone with every descendant's
CPU counted (the runner a child subreaper: ``/usr/bin/time`` and a per-test
``RUSAGE_CHILDREN`` miss what is reparented, Chromium's renderers and the eval
forkserver's workers, about 13 s in test_export_live and 17 s in test_fleet_eval),
alternating, 2 runs each: 154.6 s before, 144.0 s after. An MCP fixture server costs
about 0.9 s to start, nearly all of it importing the MCP SDK.

Then (server starts, measured per test, self+child CPU): an MCP server costs about 0.5 s
of CPU to start on an idle core (``import mcp`` alone 0.46 s, building the SDK's pydantic
models), and nearly all the child CPU of ``test_mcp_servers`` (22 starts) and
``test_mcp_third_party`` is such starts, each one a test's point (a crash, a hang, a kill,
a restart, a fresh ``Harness.from_config`` or ``harness check``). The safety-map test uses
the shared arm as its undeclared server (1.2 -> 0.6 s) and the control-script example runs
in the test's process (2.0 -> 1.2 s); what is left in those files, ``test_secrets`` (one
leaky server per planted run, the redaction property test) and ``test_export_live``
(Chromium's viewer, a subprocess that must import nothing else) would go only by
weakening a test.
"""

from __future__ import annotations

import os

from hypothesis import settings

__all__ = [
    "FAST_MINIMUM",
    "FAST_PROFILE",
    "FULL_PROFILE",
    "SLOW_FILES",
    "SLOW_MARKERS",
    "SLOW_TESTS",
    "examples",
    "floor",
    "is_fast_tier",
    "leaves_out_slow",
    "repeats",
]

FULL_PROFILE = "harness"
"""The hypothesis profile of the whole suite: hypothesis's default counts, no deadline."""

FAST_PROFILE = "harness-fast"
"""The fast tier's profile: a tenth of the examples, no deadline."""

FULL_EXAMPLES = 100
"""``max_examples`` of :data:`FULL_PROFILE` (hypothesis's default)."""

FAST_EXAMPLES = 10
"""``max_examples`` of :data:`FAST_PROFILE`: the fast tier runs a tenth of each count."""

FAST_MINIMUM = 10
"""No property test runs fewer examples than this in the fast tier (or its full count, if
that is smaller)."""

TIER_ENV = "HARNESS_TEST_TIER"
"""``fast`` or ``full`` overrides what the ``-m`` expression says (e.g. to run one file
with the fast counts: ``HARNESS_TEST_TIER=fast python -m pytest tests/context``)."""


def leaves_out_slow(markexpr: str) -> bool:
    """Whether the ``-m`` expression is (or contains) ``not slow``."""
    return "not slow" in " ".join(markexpr.split())


def is_fast_tier(markexpr: str) -> bool:
    """Whether a run with this ``-m`` expression gets the fast tier's example counts: it
    leaves ``slow`` out, unless :data:`TIER_ENV` says otherwise."""
    chosen = os.environ.get(TIER_ENV, "").strip().lower()
    if chosen in ("fast", "full"):
        return chosen == "fast"
    return leaves_out_slow(markexpr)


def examples(full: int) -> int:
    """How many examples a property test whose full-suite count is ``full`` runs now.

    Read from the loaded hypothesis profile when the test module is imported (after
    ``tests/conftest.py`` has chosen the tier's profile): ``full`` under
    :data:`FULL_PROFILE`, ``full`` scaled by the profile's ``max_examples`` otherwise."""
    scale = settings.default.max_examples / FULL_EXAMPLES
    if scale == 1:
        return full
    return max(min(full, FAST_MINIMUM), round(full * scale))


def floor(full: int) -> int:
    """A count that a campaign of property tests must reach (calls tried, blocked, ...),
    scaled like :func:`examples` but without its minimum: ``full`` in the whole suite, a
    tenth of it (at least 1) in the fast tier."""
    scale = settings.default.max_examples / FULL_EXAMPLES
    return full if scale == 1 else max(1, int(full * scale))


def repeats(full: int) -> int:
    """How many rounds an example-based test that repeats one race (threads taking a lock
    as fast as they can) runs now: ``full`` in the whole suite, a tenth of it (at least 1)
    in the fast tier, as :func:`floor` scales a count. Each round is the same assertion
    on another interleaving, so the fast tier runs the race, less often."""
    return floor(full)


SLOW_MARKERS = ("long", "libero", "sim", "browser", "ray", "servers", "waits")
"""Markers that keep a test out of the fast tier."""

SLOW_FILES: dict[str, str] = {
    "test_report_chromium": "browser",
    "test_console_browser": "browser",
    "test_console_attacks": "browser",
    "test_export_live": "browser",
    "test_fleet_ray": "ray",
    "test_fleet_eval": "ray",
    "test_ray_archive": "ray",
    "test_mcp_servers": "servers",
    "test_mcp_third_party": "servers",
    "test_cli_commands": "servers",
    "test_console_cli": "servers",
    "test_demo": "servers",
    "test_world_plugins": "servers",
    "test_benchmarks_smoke": "servers",
    "test_sim": "sim",
    "test_sim_frames": "sim",
    "test_sim_joints": "sim",
    "test_sim_mobile": "sim",
    "test_export_files": "sim",
    "test_export_video_scheduling": "long",
    "test_providers_cancel": "waits",
    # files whose every test is slow by its own markers: not even imported in the fast tier
    "test_context_reachability": "long",
    "test_eviction_properties": "long",
    "test_secrets": "long",
    "test_export_datasets_sim": "long",
    "test_sim_safety": "long",
    "test_so101_export": "long",
    "test_so101_lerobot": "long",
    "test_so101_world": "long",
    "test_libero": "libero",
    "test_libero_asset_cache": "libero",
    "test_libero_placements": "libero",
    "test_libero_recording": "libero",
    "test_libero_skills_doors": "libero",
    "test_libero_skills_goal": "libero",
    "test_libero_skills_grasps": "libero",
    "test_libero_skills_kitchen": "libero",
    "test_libero_skills_microwave": "libero",
    "test_libero_skills_racks": "libero",
    "test_libero_skills_slots": "libero",
    "test_libero_skills_stove": "libero",
    "test_libero_skills_positions": "libero",
    "test_libero_positions_choice": "libero",
    "test_libero_truth": "libero",
    "test_planner_episodes": "sim",
    "test_benchmark_live": "sim",
    "test_readme": "sim",
}
"""Test files (by name) that start a browser, Ray, server processes or a simulator, or
whose every test waits for a deadline or a cancel to pass (wall time, not CPU: each of
the 32 cancel tests against the loopback server waits about half a second), or whose
every test is long; and the marker that says which. The fast tier does not import them:
importing LeRobot, LIBERO, MuJoCo, Rerun or the MCP SDK for tests it deselects anyway
cost each of its workers seconds (``tests/project/test_tiers.py`` checks that a file
whose ``pytestmark`` makes it slow is listed)."""

SLOW_TESTS = frozenset(
    {
        "tests/cli/test_cli_first_day.py::test_a_missing_object_is_named_without_a_stray_article",
        "tests/cli/test_cli_first_day.py::test_an_unknown_window_names_the_flag",
        "tests/cli/test_cli_first_day.py::test_check_runs_the_driver_checks_against_the_profile",
        "tests/cli/test_cli_first_day.py::test_report_summary_first_failed_results_marked_and_frames_enlarge",
        "tests/cli/test_cli_first_try.py::test_demo_takes_max_turns",
        "tests/cli/test_cli_first_try.py::test_the_cli_module_imports_nothing_heavy_before_main_runs",
        "tests/cli/test_cli_usage_errors.py::test_an_unwritable_output_is_a_usage_error_in_one_line",
        "tests/console/test_console_http.py::test_a_closed_page_neither_stops_nor_stalls_the_run_and_the_terminal_still_cancels",
        "tests/console/test_console_http.py::test_a_stop_is_accepted_only_from_a_secret_holder",
        "tests/console/test_console_http.py::test_nothing_the_console_serves_carries_the_secret",
        "tests/console/test_console_http.py::test_past_runs_and_reports_come_from_its_own_store_only",
        "tests/console/test_console_http.py::test_without_the_secret_every_route_answers_401_and_nothing_else",
        "tests/context/test_bounded_growth.py::test_consolidation_reads_every_outcome_back_from_the_store_not_from_memory",
        "tests/context/test_cache_aware_cleanup.py::test_the_rule_does_not_depend_on_the_window_and_the_table_alone_waits",
        "tests/context/test_compaction.py::test_deterministic_checkpoint_stays_bounded_for_a_long_history",
        "tests/context/test_compaction_harness.py::test_a_long_session_stays_under_the_window_and_every_original_is_recallable",
        "tests/context/test_context_fidelity.py::test_the_first_exchange_of_a_long_compacted_task_is_two_recalls_away",
        "tests/context/test_episodes.py::test_a_reference_of_another_session_is_refused_and_one_of_this_session_accepted",
        "tests/context/test_episodes.py::test_items_know_their_episode_and_the_store_and_cli_show_episodes",
        "tests/core/test_secret_scan.py::test_no_planted_secret_in_the_eval_folder",
        "tests/embodiment/test_control_recording.py::test_recorded_steps_are_what_pybullet_measured_and_was_commanded",
        "tests/embodiment/test_envelope_golden.py::test_every_recorded_decision_is_made_again_word_for_word",
        "tests/embodiment/test_lease.py::test_another_process_holds_it_until_it_dies",
        "tests/embodiment/test_lease.py::test_the_simulator_takes_no_lease",
        "tests/embodiment/test_safety_findings.py::test_3_mcp_move_arm_with_only_x_y_z_speed_declared_never_moves",
        "tests/embodiment/test_safety_findings.py::test_4_mcp_move_free_with_an_excessive_speed_never_moves",
        "tests/embodiment/test_safety_motion.py::test_the_simulator_follows_its_own_description",
        "tests/export/test_export_files.py::test_eval_export_writes_a_readable_file_per_episode",
        "tests/export/test_export_files.py::test_mcap_reads_back_with_foxglove_schemas_in_order",
        "tests/fleet/test_fleet_units.py::test_the_forkserver_preload_starts_no_thread_and_prints_nothing",
        "tests/planner/test_planner.py::test_planner_answers_a_replan_from_a_queue",
        "tests/planner/test_planner.py::test_planner_puts_all_the_cubes_in_the_tray",
        "tests/planner/test_planner.py::test_planner_stacks_and_recovers_from_a_failed_grasp",
        "tests/planner/test_planner_episodes.py::test_the_planner_explores_acts_and_condenses_on_the_simulator",
        "tests/planner/test_planner_household.py::test_corruption_sweep_counts",
        "tests/project/test_benchmark_live.py::test_live_rows_run_off_and_on_side_by_side",
        "tests/project/test_layering.py::test_libraries_never_import_the_harness",
        "tests/project/test_layering.py::test_no_class_has_more_than_two_project_base_classes",
        "tests/project/test_layering.py::test_no_module_imports_another_modules_private_name",
        "tests/project/test_layering.py::test_there_are_no_import_cycles",
        "tests/project/test_readme.py::test_readme_control_script_runs",
        "tests/providers/test_llamacpp_replay.py::test_scenario_replayed",
        "tests/providers/test_local_model.py::test_check_and_run_agree_on_the_tools_a_window_holds",
        "tests/providers/test_providers_common.py::test_importing_the_registry_does_not_import_the_sdks",
        "tests/providers/test_providers_common.py::test_model_specs_and_local_server_presets",
        "tests/providers/test_providers_openai.py::test_payload_snapshot_for_a_tool_exchange_with_an_image",
        "tests/runtime/test_admission.py::test_300_randomised_segmented_moves_never_enter_the_margin",
        "tests/runtime/test_admission.py::test_two_harnesses_on_one_mcp_robot_never_overlap_commands",
        "tests/runtime/test_cancel_inflight.py::test_a_cancel_during_a_blocking_model_call_wins_and_the_late_answer_is_dropped",
        "tests/runtime/test_cancel_inflight.py::test_a_cancel_during_a_blocking_summarizer_call_wins_and_leaves_the_context",
        "tests/runtime/test_cancel_inflight.py::test_a_cancel_during_memory_consolidation_wins_and_writes_nothing",
        "tests/runtime/test_effective_arguments.py::test_randomised_calls_leaving_arguments_out_never_run_unsafe_defaults",
        "tests/runtime/test_execution.py::test_a_request_not_sent_within_the_setup_time_is_not_executed",
        "tests/runtime/test_execution.py::test_the_call_deadline_starts_when_the_request_is_sent",
        "tests/runtime/test_execution.py::test_the_send_gate_never_reports_a_sent_request_as_not_sent",
        "tests/runtime/test_isolation.py::test_a_huge_resource_is_read_in_bounded_memory",
        "tests/runtime/test_outcome.py::test_a_profile_that_blocks_every_motion_is_not_achieved",
        "tests/runtime/test_outcome.py::test_an_instruction_folded_away_still_is_checked",
        "tests/runtime/test_outcome.py::test_harness_run_exit_codes_follow_the_outcome",
        "tests/runtime/test_outcome.py::test_issue_examples_on_the_simulator",
        "tests/runtime/test_resume.py::test_a_resumed_session_has_the_context_it_had",
        "tests/runtime/test_resume.py::test_a_turn_that_died_before_its_decision_runs_again",
        "tests/runtime/test_resume.py::test_resume_through_the_console_script",
        "tests/runtime/test_resume.py::test_sigkill_loses_no_event_and_resume_continues_the_task",
        "tests/runtime/test_resume_world.py::test_a_held_cube_is_still_held_after_a_resume",
        "tests/runtime/test_resume_world.py::test_placed_cubes_stay_placed_across_a_resume",
        "tests/runtime/test_subagent_demo.py::test_harness_demo_shows_the_sub_agent",
        "tests/runtime/test_subagent_demo.py::test_the_planner_finds_the_hidden_cube_through_a_sub_agent",
        "tests/runtime/test_subagent_resume.py::test_the_crash_left_a_running_lane_inside_a_running_task",
        "tests/runtime/test_subagent_store.py::test_compaction_inside_the_lane_never_touches_the_main_lane",
        "tests/runtime/test_subagent_store.py::test_harness_context_shows_a_lane",
        "tests/runtime/test_subagent_store.py::test_the_report_nests_the_lane_under_its_call",
        "tests/runtime/test_subagents.py::test_child_requests_share_the_resident_prefix_byte_for_byte",
        "tests/skills_memory/test_memory_store.py::test_process_killed_mid_write_leaves_the_old_file",
        "tests/skills_memory/test_memory_store.py::test_sessions_sharing_a_folder_do_not_lose_updates",
        "tests/store/test_store_damage.py::test_a_damaged_file_is_one_line_naming_the_store",
        "tests/store/test_store_damage.py::test_an_event_with_invalid_json_is_skipped_and_named",
        "tests/store/test_store_damage.py::test_damage_anywhere_in_the_file_never_gives_a_traceback",
        "tests/store/test_store_damage.py::test_flipped_bytes_in_a_stored_image_are_found",
        "tests/worlds/test_libero_suite.py::test_selected_episodes_run_task_by_task",
        "tests/worlds/test_libero_units.py::test_a_libero_task_that_does_not_exist_is_a_usage_error",
        "tests/worlds/test_sim.py::test_pick_and_place_are_confirmed_by_the_evaluator",
        "tests/worlds/test_sim_frames.py::test_every_frame_handed_out_is_the_one_drawn_afresh",
        "tests/worlds/test_sim_mobile.py::test_random_joint_and_base_commands_never_leave_the_profile",
    }
)
"""``path::test`` of example-based tests measured over a second each (parameters aside)."""

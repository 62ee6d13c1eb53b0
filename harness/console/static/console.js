// The operator console page: one event stream in, a few JSON actions out. No build step.
"use strict";

const $ = (id) => document.getElementById(id);
const client = Array.from(crypto.getRandomValues(new Uint8Array(16)),
  (b) => b.toString(16).padStart(2, "0")).join("");
let role = "viewer";
let myHolder = null;  // this browser session's name in the seat (null: watching only)
let lastId = 0;
let state = {};
let source = null;
let framesVersion = -1;
const lanes = new Map();   // lane task id -> <ol> under its parent's delegate call
const calls = new Map();   // call id -> timeline <li>

// ------------------------------------------------------------------ helpers

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function short(value, limit = 300) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > limit ? text.slice(0, limit) + "…" : text;
}

function notice(text, kind = "error") {
  const box = $("notice");
  box.textContent = text;
  box.className = kind;
  box.hidden = false;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => { box.hidden = true; }, 8000);
}

async function act(path, body = {}) {
  let response;
  try {
    response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ client, ...body }),
      credentials: "same-origin",
    });
  } catch (err) {
    notice(`${path}: ${err}`);
    return null;
  }
  const data = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) {
    notice(data.error || `${path}: ${response.status}`);
    return null;
  }
  clearError();  // what the banner complained about has been put right
  return data;
}

function clearError() {
  const box = $("notice");
  if (box.className === "error") box.hidden = true;
}

// ------------------------------------------------------------------ the stream

function connect() {
  source = new EventSource(`/api/stream?client=${client}&after=${lastId}`);
  source.addEventListener("hello", (msg) => {
    const hello = JSON.parse(msg.data);
    myHolder = hello.role === "viewer" ? null : hello.who.replace(/^page /, "");
    setRole(hello.role);
    renderState(hello.state);
  });
  source.addEventListener("state", (msg) => {
    lastId = Number(msg.lastEventId) || lastId;
    renderState(JSON.parse(msg.data));
  });
  source.addEventListener("event", (msg) => {
    lastId = Number(msg.lastEventId) || lastId;
    addEvent($("timeline"), JSON.parse(msg.data), true);
  });
  source.onerror = () => {
    source.close();
    setRole("disconnected");
    setTimeout(connect, 1000);
  };
}

const ROLE_NAMES = {
  operator: "operator",
  standby: "standby (may stop; take over to act)",
  viewer: "viewer (watching only)",
};

function setRole(next) {
  role = next;
  const badge = $("role");
  badge.textContent = ROLE_NAMES[next] || next;
  badge.className = `badge ${next}`;
  document.body.dataset.role = next;
  renderClaim();
}

function renderClaim() {
  $("claim").hidden = role !== "standby";
}

// ------------------------------------------------------------------ live state

function renderState(next) {
  state = next;
  if (role === "operator" || role === "standby") {
    // The seat moves only by an explicit take-over; the state says who holds it now.
    const mine = state.seat && state.seat === myHolder;
    if (myHolder && (mine ? "operator" : "standby") !== role) setRole(mine ? "operator" : "standby");
  }
  renderClaim();
  const task = state.task;
  const status = $("task-status");
  if (state.task_id) clearError();  // a task runs: an earlier complaint is history
  if (state.task_id) {
    status.textContent = state.stop_requested ? "stopping…" : `running · turn ${task ? task.turn : 0}`;
    status.className = "badge running";
  } else if (task && task.status) {
    status.textContent = `${task.status}${task.outcome ? " · " + task.outcome : ""}`;
    status.className = `badge ${task.status}`;
  } else {
    status.textContent = "idle";
    status.className = "badge idle";
  }
  $("task-line").textContent = task ? `${task.task_id} · ${task.instruction}` : "";
  $("stop").disabled = false;  // always pressable; the server says when there is nothing to stop
  $("start").disabled = !state.accepts_tasks || Boolean(state.task_id);
  renderQuestion(state.question);
  renderRobot(state.robot || {});
  renderGauge(state.gauge, state.compactions || []);
  $("brief").textContent = state.brief || "";
  if (state.frames_version !== framesVersion) {
    framesVersion = state.frames_version;
    const box = $("frames");
    box.replaceChildren();
    for (const frame of state.frames || []) {
      const figure = el("figure");
      const img = el("img");
      img.src = `/api/frame/${frame.index}?v=${framesVersion}`;
      img.alt = `${frame.label} camera, ${frame.width}x${frame.height}`;
      figure.append(img, el("figcaption", "", `${frame.label} ${frame.width}×${frame.height}`));
      box.append(figure);
    }
  }
}

function renderQuestion(question) {
  const box = $("question");
  if (!question) {
    box.hidden = true;
    box.dataset.id = "";
    return;
  }
  if (box.dataset.id !== String(question.id)) {
    box.dataset.id = String(question.id);
    $("question-text").textContent = question.text;
    $("answer").value = "";
  }
  box.hidden = false;
}

function renderRobot(robot) {
  const list = $("robot");
  list.replaceChildren();
  const row = (name, value, cls) => {
    list.append(el("dt", "", name), el("dd", cls || "", value));
  };
  const moving = robot.moving;
  row("state", moving ? "moving" : robot.stopped === false ? "MAY BE MOVING" : "stopped",
    moving || robot.stopped === false ? "moving" : "stopped");
  row("command", robot.command ? `${robot.command.name}(${short(robot.command.args, 120)})` : "—");
  if (robot.safety) {
    const s = robot.safety;
    row("envelope", `${s.outcome} ${s.tool}${s.reason ? ": " + s.reason : ""}`, `safety-${s.outcome}`);
  }
  for (const [name, value] of Object.entries(robot.readings || {})) {
    row(name, value === null ? "missing" : short(value, 120));
  }
  if (robot.alarm) row("alarm", robot.alarm, "moving");
}

// Each mark's name under the bar, starting at its mark (ending there when it would run
// off the right edge), on the first row where it overlaps no other name: the names of
// marks a few pixels apart (nudge at 70 %, cleanup at 75 %) never print over each other.
function layoutLabels(container, placed) {
  const width = container.clientWidth;
  const rowEnds = [];
  for (const [share, label] of placed) {
    const size = label.offsetWidth;
    const x = (share / 100) * width;
    const right = x + size > width;
    const left = right ? x - size : x;
    label.classList.toggle("right", right);
    let row = rowEnds.findIndex((end) => left >= end + 6);
    if (row < 0) { row = rowEnds.length; rowEnds.push(0); }
    rowEnds[row] = left + size;
    label.style.left = `${left}px`;
    label.style.top = `${row * 13}px`;
  }
  container.style.height = `${rowEnds.length * 13}px`;
}

function renderGauge(gauge, compactions) {
  const bar = $("gauge");
  const text = $("gauge-text");
  const marks = $("gauge-marks");
  marks.replaceChildren();
  if (!gauge) {
    text.textContent = "no model call yet";
    return;
  }
  const window = gauge.window || 1;
  for (const part of ["resident", "accumulated", "refreshed"]) {
    bar.querySelector(`.${part}`).style.width = `${(100 * gauge[part]) / window}%`;
  }
  const levels = new Map();  // tokens -> names (levels often coincide: one mark, both names)
  for (const [name, tokens] of [["nudge", gauge.nudge], ["cleanup", gauge.cleanup], ["compaction", gauge.threshold]]) {
    if (tokens) levels.set(tokens, [...(levels.get(tokens) || []), name]);
  }
  const labels = $("gauge-labels");
  labels.replaceChildren();
  const placed = [];
  for (const [tokens, names] of [...levels].sort((a, b) => a[0] - b[0])) {
    const share = Math.min(100, (100 * tokens) / window);
    const m = el("span", "mark");
    m.style.left = `${share}%`;
    m.title = `${names.join("/")} at ${tokens} tokens`;
    marks.append(m);
    const label = el("span", "label", names.join("/"));
    label.title = m.title;
    labels.append(label);
    placed.push([share, label]);
  }
  layoutLabels(labels, placed);
  text.textContent = `${gauge.total} of ${window} tokens · Resident ${gauge.resident} · ` +
    `Accumulated ${gauge.accumulated} · Refreshed ${gauge.refreshed}`;
  const list = $("compactions");
  list.replaceChildren();
  for (const c of compactions.slice(-8)) {
    list.append(el("li", "", `${c.mode}: ${c.before} → ${c.after} tokens`));
  }
}

// ------------------------------------------------------------------ the timeline

function describe(e) {
  switch (e.type) {
    case "task_started": return ["task", `task ${e.task_id}: ${e.instruction} (max ${e.max_turns} turns)`];
    case "task_resumed": return ["task", `resumed from turn ${e.from_turn}`];
    case "observation": return ["observe", `observed ${Object.keys(e.cameras).join(", ") || "state"}`];
    case "model_response": {
      const call = e.tool_calls && e.tool_calls[0];
      const decision = call ? ` → ${call.name}(${short(call.arguments, 160)})` : "";
      return ["model", `${e.text || ""}${decision}`.trim() || "(empty answer)"];
    }
    case "model_discarded": return ["cancel", `model answer discarded: ${e.reason}`];
    case "model_error": return ["error", `model error ${e.kind}: ${e.message}`];
    case "model_retry": return ["warn", `model retry ${e.attempt} in ${e.wait_s}s: ${e.message}`];
    case "safety_check": return [`safety-${e.outcome}`,
      `safety ${e.outcome} ${e.tool}${e.reason ? ": " + e.reason : ""}${e.violations.length ? " [" + e.violations.join("; ") + "]" : ""}`];
    case "hook_decision": return ["warn", `hook ${e.hook} ${e.action} ${e.tool}: ${e.reason}`];
    case "tool_call": return [e.physical ? "call physical" : "call", `${e.name}(${short(e.arguments, 200)})`];
    case "tool_result": return [e.is_error ? "result error" : "result",
      `${e.name}: ${short(e.text, 300)}${e.executed ? "" : " (not executed)"}`];
    case "evaluation": return [`eval ${e.verdict.status}`, `evaluate ${e.tool}: ${e.verdict.status}${e.verdict.evidence ? " - " + e.verdict.evidence : ""}`];
    case "episode": return ["episode", `episode ${e.kind} ${e.name} ${e.status}${e.conclusion ? ": " + e.conclusion : ""}`];
    case "compaction":
      if (e.status === "started") return null;
      return ["compaction", `${e.mode} ${e.status}: ${e.tokens_before} → ${e.tokens_after} tokens${e.reason ? " (" + e.reason + ")" : ""}`];
    case "context_pressure": return ["compaction", `context pressure: ${e.tokens} of ${e.context_window} tokens`];
    case "replan": return ["replan", `revision: ${e.revision}`];
    case "user_query": return ["ask", e.status === "asked" ? `asks: ${e.question}` : `question ${e.status}${e.answer ? ": " + e.answer : ""}`];
    case "notification": return [`notify ${e.level}`, `notify (${e.level}): ${e.message}`];
    case "progress": return e.source === "model" ? null : ["dim", e.text];  // model text: in model_response
    case "lane_started": return ["lane", `sub-agent ${e.task_id}: ${e.goal}`];
    case "handoff": return ["lane", `handoff ${e.status}`];
    case "safety": return ["error", `SAFETY ${e.problem}: ${e.reason}`];
    case "memory_consolidation": return ["dim", `memory ${e.status}`];
    case "skill_loaded": return ["dim", `skill ${e.name} loaded`];
    case "done": {
      const ev = e.evidence || {};
      const lines = [`done: ${e.status} · outcome ${e.outcome} · ${e.turns} turns · ${e.termination_reason}`];
      if (ev.summary) lines.push(`evidence (${ev.checked_by || ev.check}): ${ev.summary}`);
      for (const c of ev.conditions || []) lines.push(`${c.held ? "✓" : "✗"} ${c.condition}${c.evidence ? " — " + c.evidence : ""}`);
      if (e.robot_stopped === false) lines.push("THE ROBOT MAY STILL BE MOVING");
      return [`done ${e.status} ${e.outcome}`, lines.join("\n")];
    }
    default: return null;  // deltas, snapshots, scene updates: shown on the side panels
  }
}

function addEvent(list, e, live) {
  if (live && e.type === "notification") {
    const item = el("li", `notify ${e.level}`, `${e.level}: ${e.message}`);
    $("notifications").prepend(item);
  }
  if (live && e.type === "done" && !lanes.has(e.task_id)) {
    window.lastDoneShown = performance.timeOrigin + performance.now();  // benchmarks read it
    setTimeout(loadRuns, 500);
  }
  if (live && e.type === "task_started" && !lanes.has(e.task_id)) {
    list.replaceChildren();  // the page shows the current task; earlier ones are past runs
    lanes.clear();
    calls.clear();
  }
  const shown = describe(e);
  if (!shown) return;
  const [cls, text] = shown;
  const item = el("li", `ev ${cls}`);
  item.dataset.type = e.type;
  item.append(el("span", "turn", `t${e.turn}`), el("span", "text", text));
  if (e.call_id) calls.set(e.call_id, item);
  let target = lanes.get(e.task_id) || list;
  if (e.type === "lane_started") {
    const parent = calls.get(e.parent_call_id);
    const nested = el("ol", "lane");
    nested.dataset.lane = e.task_id;
    lanes.set(e.task_id, nested);
    nested.append(item);
    if (parent) parent.after(nested); else list.append(nested);
    return;
  }
  target.append(item);
  if (target === list && list.id === "timeline") item.scrollIntoView({ block: "nearest" });
}

// ------------------------------------------------------------------ past runs and eval

async function loadRuns() {
  const response = await fetch("/api/runs");
  if (!response.ok) return;
  const data = await response.json();
  const body = $("runs").querySelector("tbody");
  body.replaceChildren();
  for (const t of data.tasks) {
    const row = el("tr");
    const when = new Date(t.started_at * 1000).toLocaleString();
    for (const v of [when, t.task_id, short(t.instruction, 80), t.status, t.outcome, t.turns]) {
      row.append(el("td", "", String(v)));
    }
    const cell = el("td");
    const view = el("button", "", "view");
    view.type = "button";
    view.addEventListener("click", () => showRun(t.task_id));
    const link = el("a", "", "report");
    link.href = `/runs/${encodeURIComponent(t.task_id)}/report`;
    link.target = "_blank";
    link.rel = "noopener";
    cell.append(view, " ", link);
    row.append(cell);
    body.append(row);
  }
}

async function showRun(taskId) {
  const response = await fetch(`/api/runs/${encodeURIComponent(taskId)}`);
  const data = await response.json();
  if (!response.ok) { notice(data.error); return; }
  const list = $("past-timeline");
  list.replaceChildren();
  for (const e of data.events) addEvent(list, e, false);
  $("past-id").textContent = taskId;
  $("past").hidden = false;
}

async function loadEval() {
  const response = await fetch("/api/eval");
  const data = await response.json().catch(() => ({}));
  if (!data.enabled) { $("eval").hidden = true; clearInterval(loadEval.timer); return; }
  $("eval").hidden = false;
  if (!data.started) { $("eval-line").textContent = `${data.folder}: not started`; return; }
  $("eval-line").textContent = `${data.suite}: ${data.done} of ${data.total} episodes${data.finished ? " (finished)" : ""}`;
  const body = $("eval-table").querySelector("tbody");
  body.replaceChildren();
  const pct = (x) => `${(100 * x).toFixed(0)}%`;
  for (const f of data.families) {
    const row = el("tr", f.overall ? "overall" : "");
    for (const v of [f.family, f.episodes, f.successes, f.failures, `${pct(f.rate)} [${pct(f.low)}, ${pct(f.high)}]`]) {
      row.append(el("td", "", String(v)));
    }
    body.append(row);
  }
  const failures = $("eval-failures");
  failures.replaceChildren();
  for (const f of data.recent_failures) failures.append(el("li", "", `${f.key} (${f.family}): ${f.status}, ${f.outcome}: ${f.reason}`));
}

// ------------------------------------------------------------------ actions

function stop() {
  window.lastStopClick = performance.timeOrigin + performance.now();
  act("/api/stop");
}

$("stop").addEventListener("click", stop);
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") { event.preventDefault(); stop(); }
});
$("claim").addEventListener("click", async () => {
  const data = await act("/api/claim", { take_over: true });
  if (data) setRole(data.role);
});
$("start-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const instruction = $("instruction").value.trim();
  if (!instruction) { notice("say what the robot should do"); return; }
  const turns = $("max-turns").value ? Number($("max-turns").value) : null;
  await act("/api/start", { instruction, max_turns: turns });
});
$("answer-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const id = Number($("question").dataset.id);
  await act("/api/answer", { question_id: id, text: $("answer").value });
});
$("revise-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("revision").value.trim();
  if (!text) return;
  if (await act("/api/revise", { text })) $("revision").value = "";
});
$("refresh-runs").addEventListener("click", loadRuns);
$("past-close").addEventListener("click", () => { $("past").hidden = true; });

connect();
loadRuns();
loadEval();
loadEval.timer = setInterval(loadEval, 2000);

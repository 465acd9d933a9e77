// A game against the bots: the setup form, the person's decisions (a bid built by clicking tokens onto the bid
// card, the Guy, Spy, Apothecary and Remove choices), and the resolution shown step by step.
// Every legal move comes from the environment's mask, sent by the server: the page offers nothing else.
import { api, hashParams, setHash, status } from "./api.js";
import { drawTable, el, tokenChips } from "./board.js";

const $ = (id) => document.getElementById(id);
const TYPE = { force: 0, blackmail: 1, gold: 2 };
const PROMPTS = {
  bid: "Your bid: click a token, then a character (every token must be placed).",
  guy: "Scheming: place Guy's next bid (he ties or beats a bid already on a character).",
  spy: "Spy: replace another seat's cube with one of yours (click a highlighted cube), or decline.",
  apothecary_first: "Apothecary: pick the first of two cubes to swap (click a highlighted cube), or decline.",
  apothecary_second: "Apothecary: pick the cube to swap it with.",
  remove: "Remove 1 Influence: remove an opponent's cube from the board.",
};

const play = { view: null, seen: 0, bid: null, selected: null, busy: false, skip: false, info: null };

function setState(state) {
  document.body.dataset.play = state;
}

function showError(message) {
  $("game-error").textContent = message || "";
  $("game-error").hidden = !message;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// --- the setup form ---

function fillSetup() {
  const form = $("setup");
  const players = Number(form.players.value);
  const seat = form.seat.value ? Number(form.seat.value) : 0;
  form.seat.replaceChildren(...[...Array(players).keys()].map((s) => el("option", { value: s, text: `P${s}`, selected: s === seat && s < players })));
  const pickers = $("opponent-pickers");
  const previous = [...pickers.querySelectorAll("select")].map((s) => s.value);
  pickers.replaceChildren();
  const mine = Number(form.seat.value);
  let i = 0;
  for (let s = 0; s < players; s++) {
    if (s === mine) continue;
    const choice = previous[i] || "value";
    pickers.append(el("label", {}, `P${s}: `, el("select", { name: `opponent${i}`, class: "opponent" },
      ...play.info.opponents.map((spec) => el("option", { value: spec, text: spec, selected: spec === choice })))));
    i++;
  }
  form.first_edition.disabled = false;
}

async function startGame(event) {
  event.preventDefault();
  const form = $("setup");
  const body = {
    players: Number(form.players.value),
    seat: Number(form.seat.value),
    opponents: [...$("opponent-pickers").querySelectorAll("select")].map((s) => s.value),
    area_control_bonus: form.area_control_bonus.checked,
    first_edition: form.first_edition.checked,
    max_rounds: Number(form.max_rounds.value) || 100,
  };
  if (form.bid_refunds.checked) body.bid_refunds = true;
  if (form.seed.value !== "") body.seed = Number(form.seed.value);
  showError("");
  try {
    status("starting…");
    const view = await api("/api/games", { method: "POST", body });
    status("");
    setHash("/play", { id: view.id }, true);
    play.seen = 0;
    await receive(view, true);
  } catch (err) {
    status("");
    alert(err.message);
  }
}

// --- receiving the game ---

async function receive(view, animate) {
  const fresh = view.events.filter((e) => e.n >= play.seen);
  play.view = view;
  $("setup").hidden = true;
  $("game").hidden = false;
  $("decision").replaceChildren();
  const speed = Number($("play-speed").value);
  if (animate && speed > 0 && fresh.length) {
    play.busy = true;
    play.skip = false;
    setState("busy");
    $("skip").hidden = false;
    for (const event of fresh) {
      addLog(event);
      if (play.skip) continue;
      $("prompt").textContent = event.text;
      drawTable($("play-table"), view.layout, event.state, view.names, { focus: event.kind === "character" ? event.target : -1 });
      await sleep(speed);
    }
    $("skip").hidden = true;
    play.busy = false;
  } else {
    fresh.forEach(addLog);
  }
  play.seen = view.event_count;
  render();
}

function addLog(event) {
  const log = $("log");
  if (!log.lastElementChild || log.lastElementChild.dataset.round !== String(event.round)) {
    log.append(el("li", { class: "round", "data-round": event.round, text: `Round ${event.round}` }));
  }
  log.append(el("li", { class: `event ${event.kind}`, "data-round": event.round, text: event.text }));
  log.scrollTop = log.scrollHeight;
}

function render() {
  const view = play.view;
  document.body.dataset.turn = String(Number(document.body.dataset.turn || 0) + 1); // for scripts: a new decision
  const pending = view.pending;
  $("end").hidden = !view.over;
  if (view.over) {
    setState("over");
    const won = view.final.winners.includes(view.seat);
    const shared = won && view.final.winners.length > 1;
    const how = view.truncated ? " (truncated at the last round)" : "";
    $("prompt").textContent = `Game over${how}.`;
    $("end-text").textContent = `${won ? (shared ? "You share the win!" : "You win!") : "You lose."} Final support: ${view.final.support.map((v, s) => `${view.names[s]} ${v}`).join(", ")}.`;
    $("download").href = `/api/games/${view.id}/export`;
    $("open-saved").hidden = !view.saved_as;
    if (view.saved_as) $("open-saved").href = `#/replay?file=${encodeURIComponent(view.saved_as)}&game=0`;
    drawTable($("play-table"), view.layout, view.state, view.names);
    return;
  }
  setState("ready");
  let prompt = `Round ${view.state.round}. ${PROMPTS[pending.decision] || pending.decision}`;
  if (pending.first_pick) {
    const [area, seat] = pending.first_pick;
    prompt += ` (first pick: ${view.names[seat]}'s cube in ${view.layout.areas[area].name})`;
  }
  $("prompt").textContent = prompt;
  if (pending.decision === "bid") {
    play.bid = { placed: new Map() };
    play.selected = null;
    selectNext();
    renderBid();
  } else renderChoice();
}

// --- the bid ---

function remaining() {
  return play.view.pending.tokens.filter((t) => !play.bid.placed.has(t.dim));
}

function selectNext(type) {
  const left = remaining();
  const same = type !== undefined ? left.find((t) => t.type === type) : undefined;
  play.selected = (same || left[0] || null);
}

function renderBid() {
  const view = play.view;
  const T = view.layout.targets.length;
  const counts = [...Array(T)].map(() => [0, 0, 0]);
  for (const [dim, target] of play.bid.placed) {
    const token = view.pending.tokens.find((t) => t.dim === dim);
    counts[target][TYPE[token.type]] += 1;
  }
  const selected = play.selected;
  const place = {
    seat: view.seat,
    counts,
    allowed: (t) => selected !== null && selected.allowed.includes(t),
    onTarget: (t) => {
      if (!selected || !selected.allowed.includes(t)) return; // the mask: nothing else can be placed
      play.bid.placed.set(selected.dim, t);
      selectNext(selected.type);
      renderBid();
    },
  };
  drawTable($("play-table"), view.layout, view.state, view.names, { place });
  const left = remaining();
  const tray = el("div", { class: "tray" }, el("span", { text: left.length ? "Your tokens left: " : "Every token is placed. " }));
  for (const token of left) {
    const chip = el("button", { type: "button", class: `tok t${TYPE[token.type]}${token === selected ? " selected" : ""}`,
      "data-dim": token.dim, title: token.type, text: token.type[0].toUpperCase() });
    chip.addEventListener("click", () => { play.selected = token; renderBid(); });
    tray.append(chip);
  }
  const chosen = counts.map((c, t) => (t < view.layout.n_characters && t !== view.layout.card_space && c.some((n) => n) ? 1 : 0)).reduce((a, b) => a + b, 0);
  const limit = view.layout.max_characters_per_bid;
  const note = chosen > limit ? el("p", { class: "warning", text: `Only your first ${limit} characters count: the tokens on later ones go to the bank.` }) : null;
  const summary = left.length ? `${left.length} left: ${["force", "blackmail", "gold"].map((k) => `${left.filter((t) => t.type === k).length} ${k}`).join(", ")}` : "";
  const submit = el("button", { type: "button", id: "submit-bid", disabled: left.length > 0, text: "Place the bid" });
  submit.addEventListener("click", submitBid);
  const undo = el("button", { type: "button", id: "undo", disabled: !play.bid.placed.size, text: "take back the last token" });
  undo.addEventListener("click", () => {
    const dims = [...play.bid.placed.keys()];
    const dim = dims[dims.length - 1];
    play.bid.placed.delete(dim);
    play.selected = view.pending.tokens.find((t) => t.dim === dim);
    renderBid();
  });
  const clear = el("button", { type: "button", id: "clear", disabled: !play.bid.placed.size, text: "clear" });
  clear.addEventListener("click", () => { play.bid.placed.clear(); selectNext(); renderBid(); });
  const parts = [tray, el("p", { class: "note", id: "remaining", text: summary }), note, el("div", { class: "buttons" }, submit, undo, clear)];
  $("decision").replaceChildren(...parts.filter(Boolean));
}

async function submitBid() {
  const action = new Array(play.view.pending.size).fill(0);
  for (const [dim, target] of play.bid.placed) action[dim] = target;
  await send(action);
}

// --- the other decisions ---

function renderChoice() {
  const view = play.view;
  const pending = view.pending;
  const choose = (value) => {
    const action = new Array(pending.size).fill(0);
    action[0] = value;
    send(action);
  };
  const cubes = pending.choices.filter((c) => c.area !== undefined);
  drawTable($("play-table"), view.layout, view.state, view.names, { pick: cubes.length ? { cubes, onPick: choose } : null });
  const box = el("div", { class: "choices" });
  for (const c of pending.choices) {
    const extra = c.tokens ? ` (Guy places ${c.tokens.map((n, t) => (n ? `${n} ${["force", "blackmail", "gold"][t]}` : "")).filter(Boolean).join(", ")})` : "";
    const button = el("button", { type: "button", class: "choice", "data-value": c.value, text: c.text + extra });
    button.addEventListener("click", () => choose(c.value));
    box.append(button);
  }
  if (pending.can_decline) {
    const button = el("button", { type: "button", id: "decline", class: "decline", text: pending.decision === "guy" ? "pass" : "decline" });
    button.addEventListener("click", () => choose(0));
    box.append(button);
  }
  $("decision").replaceChildren(box);
}

async function send(action) {
  if (play.busy) return;
  showError("");
  setState("busy");
  $("decision").replaceChildren();
  try {
    const view = await api(`/api/games/${play.view.id}/act`, { method: "POST", body: { action, since: play.seen } });
    await receive(view, true);
  } catch (err) {
    showError(err.message);
    render();
  }
}

// --- routing ---

export async function routePlay(params) {
  if (!play.info) play.info = await api("/api/info");
  const id = params.get("id");
  if (!id) {
    if (play.view && play.view.id) return;
    $("setup").hidden = false;
    $("game").hidden = true;
    fillSetup();
    return;
  }
  if (play.view && play.view.id === id) return;
  try {
    play.seen = 0;
    $("log").replaceChildren();
    await receive(await api(`/api/games/${id}`), false);
  } catch (err) {
    $("setup").hidden = false;
    $("game").hidden = true;
    fillSetup();
    alert(`${err.message}: start a new game`);
  }
}

export function initPlay() {
  const form = $("setup");
  form.players.onchange = fillSetup;
  form.seat.onchange = fillSetup;
  form.onsubmit = startGame;
  $("skip").onclick = () => { play.skip = true; };
  $("new-game").onclick = () => {
    play.view = null;
    $("log").replaceChildren();
    setHash("/play", {}, true);
    $("setup").hidden = false;
    $("game").hidden = true;
    fillSetup();
  };
  $("save").onclick = async () => {
    try {
      const saved = await api(`/api/games/${play.view.id}/save`, { method: "POST" });
      play.view.saved_as = saved.file;
      $("open-saved").href = `#/replay?file=${encodeURIComponent(saved.file)}&game=0`;
      $("open-saved").hidden = false;
      status(`saved as ${saved.file}`);
    } catch (err) {
      showError(err.message);
    }
  };
}

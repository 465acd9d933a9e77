// The replay viewer: the list of games, then one game step by step (round start, each reveal, each character
// resolved, each decision, the end of the round), with the keyboard, play/pause and a link to each moment.
import { api, hashParams, setHash, status } from "./api.js";
import { drawTable, el, seatColour } from "./board.js";

const $ = (id) => document.getElementById(id);
const PAGE = 50;

const viewer = {
  replay: null, steps: [], roundStarts: [], at: 0, timer: null, file: null, offset: 0,
};

function flatten(replay) {
  const steps = [], starts = [];
  replay.rounds.forEach((round, r) => {
    starts.push(steps.length);
    steps.push({ r, e: -1, state: round.start, text: `Round ${round.round}: bidding`, focus: -1 });
    round.events.forEach((event, e) => {
      steps.push({ r, e, state: event.state, text: event.text, focus: event.kind === "character" ? event.target : -1 });
    });
  });
  if (!steps.length) steps.push({ r: 0, e: -1, state: replay.start, text: "No round was played", focus: -1 });
  return { steps, starts };
}

function show() {
  const { replay, steps } = viewer;
  const step = steps[viewer.at];
  const round = replay.rounds[step.r];
  drawTable($("replay-table"), replay.layout, step.state, replay.names, { focus: step.focus });
  $("step-text").textContent = `Step ${viewer.at + 1}/${steps.length}: ${step.text}`;
  $("round").value = round ? round.round : 1;
  const log = el("ol", { class: "events" });
  if (round) {
    round.events.forEach((event, e) => {
      const item = el("li", { class: e === step.e ? "current" : e < step.e ? "past" : "", text: event.text });
      item.addEventListener("click", () => go(viewer.roundStarts[step.r] + 1 + e));
      log.append(item);
    });
  }
  $("replay-table").querySelector(".right").append(el("h3", { text: "This round" }), log);
  setHash("/replay", { file: replay.file, game: replay.index, round: round ? round.round : 1, step: step.e + 1 });
  $("share").href = location.href;
}

function go(i) {
  viewer.at = Math.max(0, Math.min(viewer.steps.length - 1, i));
  show();
}

function stepRound(delta) {
  const r = viewer.steps[viewer.at].r + delta;
  if (r < 0) return go(0);
  if (r >= viewer.roundStarts.length) return go(viewer.steps.length - 1);
  go(viewer.roundStarts[r]);
}

function goRound(number, step = 0) {
  const r = viewer.replay.rounds.findIndex((round) => round.round === number);
  if (r < 0) return;
  go(viewer.roundStarts[r] + step);
}

function playPause(force) {
  const playing = force !== undefined ? !force : viewer.timer !== null;
  if (playing) {
    clearInterval(viewer.timer);
    viewer.timer = null;
    $("play").textContent = "play";
  } else {
    viewer.timer = setInterval(() => {
      if (viewer.at >= viewer.steps.length - 1) return playPause(false);
      go(viewer.at + 1);
    }, Number($("speed").value));
    $("play").textContent = "pause";
  }
}

function showError(message) {
  $("viewer-error").textContent = message;
  $("viewer-error").hidden = !message;
}

export async function openReplay(file, game, round, step) {
  playPause(false);
  showError("");
  status("replaying…");
  let replay;
  try {
    replay = await api(`/api/replay?file=${encodeURIComponent(file)}&game=${game}`);
  } catch (err) {
    status("");
    $("viewer-main").hidden = true;
    $("viewer-empty").hidden = true;
    showError(`This game cannot be shown: ${err.message}`);
    return;
  }
  status("");
  viewer.replay = replay;
  const { steps, starts } = flatten(replay);
  viewer.steps = steps;
  viewer.roundStarts = starts;
  $("viewer-empty").hidden = true;
  $("viewer-main").hidden = false;
  $("replay-title").textContent = replay.title;
  $("round").max = replay.rounds.length ? replay.rounds[replay.rounds.length - 1].round : 1;
  $("round-count").textContent = `of ${replay.rounds.length}`;
  $("replay-warnings").textContent = (replay.warnings || []).join(" ");
  $("replay-warnings").hidden = !(replay.warnings || []).length;
  viewer.at = 0;
  if (round) goRound(round, step || 0);
  else show();
}

async function listGames(file, offset = 0) {
  viewer.file = file;
  viewer.offset = offset;
  let page;
  try {
    page = await api(`/api/replays/games?file=${encodeURIComponent(file)}&offset=${offset}&limit=${PAGE}`);
  } catch (err) {
    showError(err.message);
    return;
  }
  $("games-box").hidden = false;
  $("games-title").textContent = file.replace(/^\d+\//, "");
  $("games-note").textContent = page.note || "";
  const body = $("games").querySelector("tbody");
  body.replaceChildren();
  for (const g of page.games) {
    const label = g.agents
      ? `${g.agents.join(" · ")} — ${g.support.join("/")}${g.rounds ? `, ${g.rounds} rounds` : ""}`
      : `${g.players} players, ${g.rounds} rounds${g.description ? " — " + g.description : ""}`;
    const row = el("tr", { class: "game", "data-index": g.index }, el("td", { text: `#${g.index}` }), el("td", { text: label }));
    row.addEventListener("click", () => openReplay(file, g.index));
    body.append(row);
  }
  $("games-range").textContent = `${offset + 1}–${offset + page.games.length} of ${page.total}`;
  $("games-prev").disabled = offset === 0;
  $("games-next").disabled = offset + PAGE >= page.total;
}

export async function loadLibrary() {
  let data;
  try {
    data = await api("/api/replays");
  } catch (err) {
    showError(err.message);
    return;
  }
  const list = $("files");
  list.replaceChildren();
  if (!data.files.length) {
    list.append(el("li", { class: "note", text: "No games: start the server with --replays DIR (e.g. results/), or play a game and save it." }));
  }
  for (const f of data.files) {
    const item = el("li", { class: "file" + (f.error ? " broken" : ""), "data-file": f.id, title: f.root },
      el("span", { text: f.path }), el("small", { text: f.error ? " unreadable" : ` ${f.games} game${f.games === 1 ? "" : "s"}` }));
    item.addEventListener("click", () => {
      if (f.error) {
        $("viewer-main").hidden = true;
        showError(`${f.path}: ${f.error}`);
      } else if (f.games === 1) {
        $("games-box").hidden = true;
        openReplay(f.id, 0);
      } else listGames(f.id);
    });
    list.append(item);
  }
  return data.files;
}

export function initViewer() {
  $("first").onclick = () => go(0);
  $("last").onclick = () => go(viewer.steps.length - 1);
  $("prev").onclick = () => go(viewer.at - 1);
  $("next").onclick = () => go(viewer.at + 1);
  $("prev-round").onclick = () => stepRound(-1);
  $("next-round").onclick = () => stepRound(1);
  $("play").onclick = () => playPause();
  $("round").onchange = () => {
    goRound(Number($("round").value));
    $("round").blur(); // the keys step the replay again
  };
  $("speed").onchange = () => { if (viewer.timer) { playPause(false); playPause(true); } };
  $("games-prev").onclick = () => listGames(viewer.file, Math.max(0, viewer.offset - PAGE));
  $("games-next").onclick = () => listGames(viewer.file, viewer.offset + PAGE);
  $("share").onclick = (event) => {
    event.preventDefault();
    navigator.clipboard?.writeText(location.href).then(() => status("link copied"), () => status(location.href));
  };
  document.addEventListener("keydown", (event) => {
    if ($("view-replays").hidden || !viewer.replay) return;
    if (["INPUT", "SELECT", "TEXTAREA"].includes(event.target.tagName)) return;
    const keys = {
      ArrowRight: () => go(viewer.at + 1), ArrowLeft: () => go(viewer.at - 1),
      PageDown: () => stepRound(1), PageUp: () => stepRound(-1), ArrowDown: () => stepRound(1), ArrowUp: () => stepRound(-1),
      Home: () => go(0), End: () => go(viewer.steps.length - 1), " ": () => playPause(),
    };
    if (keys[event.key]) {
      event.preventDefault();
      keys[event.key]();
    }
  });
}

export async function routeViewer(params) {
  const files = (await loadLibrary()) || [];
  const file = params.get("file");
  if (!file) return;
  const game = Number(params.get("game") || 0);
  const listed = files.find((f) => f.id === file);
  if (listed && listed.games > 1 && viewer.file !== file) listGames(file, Math.floor(game / PAGE) * PAGE);
  const same = viewer.replay && viewer.replay.file === file && viewer.replay.index === game;
  if (!same) await openReplay(file, game, Number(params.get("round") || 0), Number(params.get("step") || 0));
}

export { seatColour };

// The page: two views (the replay viewer and a game against the bots), chosen by the URL's hash, so that
// every moment of a replay and every game in progress has its own link.
import { hashParams } from "./api.js";
import { initPlay, routePlay } from "./play.js";
import { initViewer, routeViewer } from "./viewer.js";

async function route() {
  const { route, params } = hashParams();
  const playing = route.startsWith("/play");
  document.getElementById("view-replays").hidden = playing;
  document.getElementById("view-play").hidden = !playing;
  document.getElementById("tab-replays").classList.toggle("active", !playing);
  document.getElementById("tab-play").classList.toggle("active", playing);
  if (playing) await routePlay(params);
  else await routeViewer(params);
  document.body.dataset.ready = "1";
}

initViewer();
initPlay();
window.addEventListener("hashchange", route);
route();

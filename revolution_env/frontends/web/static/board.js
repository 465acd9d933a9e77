// Drawing the table of one moment of a game: the town (SVG), the support track, the holdings and the bid card.
// Everything is drawn from a snapshot (see trace.py: support, tokens, bank, board, supply, bids, winners).

export const SEAT_COLOURS = ["#2f6fba", "#2e9a57", "#8b4fb3", "#e07b1a"];
export const GUY_COLOUR = "#8d8d8d";
export const TOKEN_LETTERS = ["F", "B", "G"];
const SVG = "http://www.w3.org/2000/svg";

export function seatColour(layout, seat) {
  return seat === layout.puppet ? GUY_COLOUR : SEAT_COLOURS[seat % SEAT_COLOURS.length];
}

export function el(tag, attrs = {}, ...children) {
  const node = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

export function tokenChips(row, extra = "") {
  const span = el("span", { class: "chips" });
  row.forEach((n, t) => {
    if (n > 0) span.append(el("span", { class: `tok t${t} ${extra}`, text: n > 1 ? `${n}${TOKEN_LETTERS[t]}` : TOKEN_LETTERS[t] }));
  });
  return span;
}

// The town: seven areas, their spaces, the cubes of each seat. `pick` = {cubes: [{area, cube, value}], onPick}
export function drawTown(layout, state, names, pick = null) {
  const W = 800, cols = 4, gap = 10, aw = (W - gap * (cols + 1)) / cols, ah = 150;
  const rows = Math.ceil(layout.areas.length / cols);
  const svg = el("svg:svg", { viewBox: `0 0 ${W} ${rows * (ah + gap) + gap}`, class: "town", role: "img",
    "aria-label": "the town" });
  const pickable = new Map();
  for (const p of pick ? pick.cubes : []) pickable.set(`${p.area}/${p.cube}`, p);
  layout.areas.forEach((area, a) => {
    const r = Math.floor(a / cols), c = a % cols;
    const x = gap + c * (aw + gap) + (r === rows - 1 ? (cols * rows - layout.areas.length) * (aw + gap) / 2 : 0);
    const y = gap + r * (ah + gap);
    const row = state.board[a];
    const most = Math.max(...row);
    const owner = most > 0 && row.filter((n) => n === most).length === 1 ? row.indexOf(most) : -1;
    const g = el("svg:g", { class: "area", "data-area": a });
    g.append(el("svg:rect", { x, y, width: aw, height: ah, rx: 10, class: "area-box",
      stroke: owner >= 0 ? seatColour(layout, owner) : "#d8cfbf", "stroke-width": owner >= 0 ? 3 : 1.2 }));
    g.append(el("svg:text", { x: x + 10, y: y + 22, class: "area-name", text: area.name }));
    g.append(el("svg:circle", { cx: x + aw - 22, cy: y + 22, r: 15, class: "area-support" }));
    g.append(el("svg:text", { x: x + aw - 22, y: y + 27, class: "area-support-text", "text-anchor": "middle", text: area.support }));
    const via = layout.targets.filter((t) => t.area === a).map((t) => t.name).join(", ");
    g.append(el("svg:text", { x: x + 10, y: y + 40, class: "area-via", text: `${area.spaces} spaces${via ? " · " + via : ""}` }));
    const fill = [];
    row.forEach((n, s) => { for (let i = 0; i < n; i++) fill.push(s); });
    const size = 26, per = 4;
    for (let i = 0; i < area.spaces; i++) {
      const sx = x + 12 + (i % per) * (size + 8), sy = y + 52 + Math.floor(i / per) * (size + 8);
      const s = fill[i];
      const attrs = { x: sx, y: sy, width: size, height: size, rx: 4, class: "space" };
      if (s !== undefined) {
        attrs.fill = seatColour(layout, s);
        attrs.class = "cube";
        attrs["data-seat"] = s;
        const p = pickable.get(`${a}/${s}`);
        if (p) {
          attrs.class = "cube pickable";
          attrs.tabindex = 0;
          attrs["data-value"] = p.value;
          attrs.onclick = () => pick.onPick(p.value);
        }
        const cube = el("svg:rect", attrs);
        cube.append(el("svg:title", { text: `${names[s]}'s cube in ${area.name}` }));
        g.append(cube);
      } else {
        g.append(el("svg:rect", attrs));
      }
    }
    const foot = owner >= 0 ? `${names[owner]} controls` : row.some((n) => n) ? "tied" : "empty";
    g.append(el("svg:text", { x: x + 10, y: y + ah - 10, class: "area-foot", fill: owner >= 0 ? seatColour(layout, owner) : "#8a8178", text: foot }));
    svg.append(g);
  });
  return svg;
}

export function drawTrack(layout, state, names) {
  const final = state.final;
  const values = final ? final.support : state.support;
  const top = Math.max(50, ...values);
  const box = el("div", { class: "track" }, el("h3", { text: final ? "Final support (track + tokens + areas)" : "Support" }));
  values.forEach((v, s) => {
    const winner = final && final.winners.includes(s);
    box.append(el("div", { class: "lane" + (winner ? " winner" : "") },
      el("span", { class: "who", text: names[s] }),
      el("span", { class: "bar-box" }, el("span", { class: "bar", style: `width:${(100 * v) / top}%;background:${seatColour(layout, s)}` })),
      el("span", { class: "value", "data-seat": s, text: String(v) + (winner ? " ★" : "") })));
  });
  return box;
}

export function drawHoldings(layout, state, names) {
  const table = el("table", { class: "holdings" });
  table.append(el("tr", {}, el("th", { text: "" }), el("th", { text: "support" }), el("th", { text: "Force" }),
    el("th", { text: "Blackmail" }), el("th", { text: "Gold" }), el("th", { text: "cubes left" })));
  state.tokens.forEach((row, s) => {
    table.append(el("tr", {}, el("td", {}, el("span", { class: "swatch", style: `background:${seatColour(layout, s)}` }), names[s]),
      el("td", { text: state.support[s] }), ...row.map((n) => el("td", { text: n })), el("td", { text: state.supply[s] })));
  });
  table.append(el("tr", { class: "bank" }, el("td", { text: "bank" }), el("td"), ...state.bank.map((n) => el("td", { text: n })), el("td")));
  return table;
}

// The bid card: one row per bid target, one column per seat. `focus`: the target being resolved.
// `place`: the person's bid being built: {counts: [T][3], allowed(target) -> bool, onTarget(target), seat}
export function drawBidCard(layout, state, names, focus = -1, place = null) {
  const table = el("table", { class: "bidcard" });
  const seats = [...Array(layout.seats).keys()];
  const title = place ? "Your bid" : state.bids ? `Bids of round ${state.bids_round}` : "Bids (none revealed yet)";
  table.append(el("caption", { text: title }));
  table.append(el("tr", {}, el("th", { text: "" }), ...seats.map((s) => el("th", { style: `color:${seatColour(layout, s)}`, text: names[s] }))));
  layout.targets.forEach((target, t) => {
    const winner = state.winners ? state.winners[t] : -2;
    const cls = ["target"];
    if (t === focus) cls.push("focus");
    if (winner >= -1 && state.bids) cls.push("resolved");
    const attrs = { class: cls.join(" "), "data-target": t };
    if (place) {
      if (place.allowed(t)) {
        attrs.class += " droppable";
        attrs.onclick = () => place.onTarget(t);
      } else attrs.class += " blocked";
    }
    const row = el("tr", attrs, el("th", { class: "name" }, el("span", { text: target.name }), el("small", { text: target.gains })));
    for (const s of seats) {
      let cell;
      if (place && s === place.seat) cell = el("td", { class: "mine" }, tokenChips(place.counts[t]));
      else if (!place && state.bids) cell = el("td", {}, tokenChips(state.bids[s][t]));
      else cell = el("td");
      if (!place && state.bids && winner === s) cell.classList.add("won");
      row.append(cell);
    }
    table.append(row);
  });
  return table;
}

export function drawTable(container, layout, state, names, { focus = -1, pick = null, place = null } = {}) {
  container.replaceChildren(
    el("div", { class: "left" }, drawTown(layout, state, names, pick), drawTrack(layout, state, names), drawHoldings(layout, state, names)),
    el("div", { class: "right" }, drawBidCard(layout, state, names, focus, place)),
  );
}

// The JSON API: every failure becomes an Error carrying the server's one-line message.
export async function api(path, { method = "GET", body } = {}) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new Error(`the server cannot be reached (${err.message})`);
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
  }
  if (!response.ok) throw new Error((data && data.error) || `${response.status} ${response.statusText}`);
  return data;
}

export function hashParams() {
  const [route, query] = location.hash.replace(/^#/, "").split("?");
  return { route: route || "/replays", params: new URLSearchParams(query || "") };
}

export function setHash(route, params, replace = true) {
  const query = new URLSearchParams(params).toString();
  const hash = `#${route}${query ? "?" + query : ""}`;
  if (location.hash === hash) return;
  if (replace) history.replaceState(null, "", hash);
  else location.hash = hash;
}

export function status(text) {
  document.getElementById("status").textContent = text || "";
}

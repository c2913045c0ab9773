// clinsearch web page: plain JavaScript over the REST API. Text from the server is always
// inserted with textContent (never as HTML). The token and purpose live in sessionStorage.
"use strict";

const $ = (id) => document.getElementById(id);
const session = {
  get token() { return sessionStorage.getItem("clinsearch.token") || ""; },
  get purpose() { return sessionStorage.getItem("clinsearch.purpose") || ""; },
  set(token, purpose) {
    sessionStorage.setItem("clinsearch.token", token);
    sessionStorage.setItem("clinsearch.purpose", purpose);
  },
  clear() { sessionStorage.removeItem("clinsearch.token"); sessionStorage.removeItem("clinsearch.purpose"); },
};
const state = { info: null, offset: 0, cohortOffset: 0, cohort: null, cohortTiers: [] };
const COHORT_PAGE = 25;

class ApiError extends Error {}

async function api(path, options = {}) {
  // headers carry Latin-1 only: the purpose goes percent-encoded (the server decodes it)
  const headers = Object.assign({ "X-Purpose": encodeURIComponent(session.purpose) }, options.headers || {});
  if (session.token) headers.Authorization = "Bearer " + session.token;
  if (options.json !== undefined) {
    headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(options.json);
  }
  const response = await fetch(path, { method: options.method || "GET", headers, body: options.body });
  if (!response.ok) {
    let detail = response.statusText;
    try {
      const body = await response.json();
      detail = typeof body.detail === "string" ? body.detail
        : (body.detail || []).map((d) => `${d.loc.slice(1).join(".")}: ${d.msg}`).join("\n");
    } catch (e) { /* not JSON */ }
    if (response.status === 401) {  // the server says why: no token, unknown, revoked, expired
      detail = `Your token was not accepted: ${detail}. Start a new session.`;
      signOut(detail);
    }
    throw new ApiError(detail);
  }
  return options.raw ? response : response.json();
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v); else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

// The cue that made a finding absent, uncertain or not the report's own: words, category, rule.
function triggerText(t) {
  if (!t) return "";
  if (t.start === null) return `${t.rule}: ${t.text}`;
  return `"${t.text}" (${t.category.toLowerCase()}, rule "${t.rule}")`;
}

// Text with finding spans, their triggers' cue words and query highlights marked: a class set per character, then runs.
function marked(text, findings, highlights = []) {
  const classes = Array.from(text, () => new Set());
  const titles = Array.from(text, () => "");
  for (const f of findings) {
    const ctx = (f.context || []).length ? " ctx" : "";
    for (let i = f.start; i < f.end && i < text.length; i++) {
      classes[i].add("f-" + f.polarity + ctx);
      titles[i] = `${f.name}: ${f.polarity}${ctx ? " (" + f.context.join(", ") + ")" : ""}`;
    }
    for (const m of f.modifiers || []) {
      for (let i = m.start; i < m.end && i < text.length; i++) classes[i].add("mod");
    }
    const t = f.trigger;
    if (t && t.start !== null) for (let i = t.start; i < t.end && i < text.length; i++) classes[i].add("cue");
  }
  for (const [s, e] of highlights) for (let i = s; i < e && i < text.length; i++) classes[i].add("hl");
  const out = document.createDocumentFragment();
  let i = 0;
  while (i < text.length) {
    const key = [...classes[i]].sort().join(" ") + "|" + titles[i];
    let j = i + 1;
    while (j < text.length && [...classes[j]].sort().join(" ") + "|" + titles[j] === key) j++;
    const chunk = text.slice(i, j);
    if (classes[i].size) {
      const span = el("span", { class: [...classes[i]].join(" ") , text: chunk });
      if (titles[i]) span.title = titles[i];
      out.append(span);
    } else out.append(chunk);
    i = j;
  }
  return out;
}

function showError(id, error) { $(id).textContent = error ? String(error.message || error) : ""; }

// ---- session -------------------------------------------------------------------------------
async function start() {
  const s = await (await fetch("/api/session")).json();
  $("token-row").hidden = !s.auth_required;
  $("token").required = s.auth_required;
  if (session.purpose && (session.token || !s.auth_required)) await enter();
  else { $("login").hidden = false; $(s.auth_required ? "token" : "purpose").focus(); }
}

async function enter() {
  try {
    state.info = await api("/api/info");
  } catch (e) { showError("login-error", e); $("login").hidden = false; return; }
  const c = state.info.counts;
  $("index-info").textContent = `${state.info.generation} · ${c.reports.toLocaleString()} reports · ` +
    `${c.patients.toLocaleString()} patients`;
  $("who").textContent = `${state.info.user.name} (${state.info.user.role}) · purpose: ${session.purpose}`;
  const methods = new Set(state.info.methods);
  for (const o of $("method").options) o.disabled = !methods.has(o.value);
  for (const name of state.info.sections) $("section").append(el("option", { value: name, text: name }));
  const viewer = state.info.user.role === "viewer";
  $("tab-report").hidden = viewer;
  $("login").hidden = true; $("main").hidden = false; $("sign-out").hidden = false;
  $("q").focus();
  await entered();  // workbench.js: bundles, lists, the view the URL names
}

function signOut(message) {
  session.clear();
  $("main").hidden = true; $("sign-out").hidden = true; $("login").hidden = false;
  $("who").textContent = ""; $("index-info").textContent = "";
  showError("login-error", message || "");
}

// ---- tabs (arrow keys move between them) ---------------------------------------------------
function selectTab(tab) {
  for (const t of document.querySelectorAll('[role="tab"]')) {
    const on = t === tab;
    t.setAttribute("aria-selected", on); t.tabIndex = on ? 0 : -1;
    $(t.getAttribute("aria-controls")).hidden = !on;
  }
  tab.focus();
}

// ---- search ---------------------------------------------------------------------------------
function searchParams() {
  const p = new URLSearchParams({ q: $("q").value, method: $("method").value, level: $("level").value,
    top: $("per-page").value, offset: state.offset, polarity: $("polarity").value });
  const optional = { context: "context", date_from: "date-from", date_to: "date-to", section: "section", type: "type" };
  for (const [name, id] of Object.entries(optional)) if ($(id).value.trim()) p.set(name, $(id).value.trim());
  return p;
}

async function search() {
  showError("search-error", "");
  $("search-status").textContent = "searching…";
  let data;
  const params = searchParams();
  params.set("exact", "true");  // the exact numbers asserting the query, as the cohort counts
  try { data = await api("/api/search?" + params); }
  catch (e) { $("search-status").textContent = ""; $("results").replaceChildren(); showError("search-error", e); return; }
  const plus = data.total_capped ? "+" : "";
  const first = data.hits.length ? data.offset + 1 : 0;
  const level = $("level").value;
  const exact = data.asserting ? ` · ${countText(data.asserting[level], data.count_threshold)} ${level}s assert the query (exact, as the cohort counts)` : "";
  $("search-status").textContent = (state.info.user.role === "viewer"
    ? `${countText(data.total, data.count_threshold)}${plus} matching ${level}s (counts only for your role)`
    : `${first}–${data.offset + data.hits.length} of ${data.total}${plus} ranked ${level}s`) + exact +
    (data.searched !== $("q").value ? ` · searched: ${data.searched}` : "") +
    ((data.tiers || []).length ? " · by tier: " + data.tiers.map((t) => `${t.label}: ${countText(t.count, data.count_threshold)}`).join(" · ") : "");
  renderHits(data.hits, data.tiers || []);
  setUrl("search", searchParams());
  $("save-search-form").hidden = !data.asserting;  // a saved search follows what asserts it
  $("prev").disabled = data.offset === 0;
  // pages reach every unit asserting the query, beyond the depth searched so far
  const reach = Math.max(data.total, data.asserting ? data.asserting[level] : 0);
  $("next").disabled = state.info.user.role === "viewer" || data.offset + data.top >= reach;
}

function hitCard(hit) {
  const meta = el("div", { class: "meta" },
    el("span", { text: `#${hit.rank}` }), el("span", { text: `report ${hit.report_id}` }),
    el("span", { text: `patient ${hit.patient_id}` }), el("span", { text: `visit ${hit.visit_id}` }),
    el("span", { text: `score ${hit.score.toFixed(3)}` }));
  const open = el("button", { type: "button", text: "Open report", onclick: () => openReport(hit.report_id, hitNames(hit)) });
  meta.append(open);
  const against = hit.against_query || [];
  if (against.length) meta.append(el("span", { class: "badge against-badge", text: `states it as ${against.join(" / ")}` }));
  if (hit.explanation && hit.explanation.match === "text")
    meta.append(el("span", { class: "badge", text: "matched as text", title: hit.explanation.fallback || "" }));
  const tier = hit.explanation && hit.explanation.tier;
  if (tier && tier !== "stated") {  // weaker than stated now: say which tier, and the cue words
    const cue = hit.explanation.trigger ? hit.explanation.trigger.text || hit.explanation.trigger.rule : "";
    meta.append(el("span", { class: `badge tier-badge tier-${tier}`, "data-tier": tier,
      text: hit.explanation.tier_label + (cue ? ` · “${cue}”` : ""), title: "search tier (and the words that put the hit there)" }));
  }
  const card = el("article", { class: "hit" + (against.length ? " against" : ""), "data-report": hit.report_id }, meta,
    el("p", { class: "sentence" }, marked(hit.sentence, findingsShown(hit.findings), hit.highlights)));
  const why = hit.explanation && (hit.explanation.summary || hit.explanation.method);
  if (why) meta.append(el("span", { class: "why", text: String(why) }));
  return card;
}

// A header before the first hit of each tier: "stated only as the reason for the exam: 75 reports".
function tierHeads(hits, tiers) {
  const level = $("level").value;
  const heads = new Map(tiers.map((t) => [t.tier, `${t.label}: ${t.count === null ? "a few" : t.count} ${level}${t.count === 1 ? "" : "s"}`]));
  const out = [];
  let last = null;
  for (const h of hits) {
    const tier = h.explanation && h.explanation.tier;
    if (tier && tier !== last && heads.has(tier) && tiers.length > 1)
      out.push(el("h3", { class: "tier-head", "data-tier": tier, text: heads.get(tier) }));
    last = tier || last;
    out.push(hitCard(h));
  }
  return out;
}

function renderHits(hits, tiers = []) {
  const box = $("results");
  if (!$("group").checked) {
    // hits that state the query's finding the other way are ranked apart, after the others
    const apart = hits.filter((h) => (h.against_query || []).length);
    const cards = tierHeads(hits.filter((h) => !(h.against_query || []).length), tiers);
    if (apart.length) cards.push(el("h3", { class: "against-head", text: `${apart.length} hit${apart.length > 1 ? "s" : ""} on this page state the finding the other way (ranked apart):` }), ...apart.map(hitCard));
    box.replaceChildren(...cards);
    return;
  }
  const groups = new Map();
  for (const h of hits) { if (!groups.has(h.patient_id)) groups.set(h.patient_id, []); groups.get(h.patient_id).push(h); }
  box.replaceChildren(...[...groups].map(([patient, items]) => el("section", { class: "patient-group" },
    el("h3", { text: `patient ${patient} · ${items.length} hit${items.length > 1 ? "s" : ""}` }), ...items.map(hitCard))));
}

// ---- cohort ---------------------------------------------------------------------------------
async function cohort() {
  showError("cohort-error", "");
  const body = { query: $("cohort-query").value, level: $("cohort-level").value,
                 offset: state.cohortOffset, limit: COHORT_PAGE };
  if ($("cohort-list").value) body.list_id = Number($("cohort-list").value);
  Object.assign(body, tierFields(state.cohortTiers));
  let data;
  try { data = await api("/api/cohort", { method: "POST", json: body }); }
  catch (e) { showError("cohort-error", e); $("cohort-counts").hidden = true; $("cohort-tiers").hidden = true; $("cohort-members").replaceChildren(); $("cohort-csv").disabled = true; return; }
  state.cohort = body;
  setUrl("cohort", cohortUrlParams(body));
  $("save-form").hidden = false;
  drawCohortCharts(body);
  for (const level of ["patient", "visit", "report"]) $("count-" + level).textContent = countText(data.counts[level], data.count_threshold);
  $("cohort-counts").hidden = false;
  showTiers(data);
  const viewer = state.info.user.role === "viewer";
  $("cohort-csv").disabled = viewer;
  $("cohort-pager").hidden = viewer;  // viewers see counts only: no members, nothing to page
  if (viewer) {
    $("cohort-members").replaceChildren(el("p", { text: "Members are not shown for your role (counts only)." }));
    return;
  }
  const table = el("table", {}, el("caption", { text:
    `${data.level}s ${data.total ? data.offset + 1 : 0}–${data.offset + data.members.length} of ${data.total.toLocaleString()}` }));
  const head = el("tr", {}, ...data.columns.map((c) => el("th", { scope: "col", text: c })),
    el("th", { scope: "col", text: "matched" }), el("th", { scope: "col", text: "trigger" }),
    el("th", { scope: "col", text: "evidence sentence" }));
  table.append(el("thead", {}, head));
  const rows = data.members.map((m) => el("tr", {}, ...m.ids.map((v, i) => el("td", {},
      data.columns[i] === "patient_id" ? el("button", { type: "button", class: "link", text: v, title: `timeline of patient ${v}`,
        onclick: () => openTimeline(v, body.query) }) : v)),
    el("td", { text: m.term }), el("td", { text: m.trigger }), el("td", {}, m.report_id
      ? el("button", { type: "button", text: "open", title: `open report ${m.report_id}`, onclick: () => openReport(m.report_id) }) : "",
      " " + m.sentence)));
  table.append(el("tbody", {}, ...rows));
  $("cohort-members").replaceChildren(table);
  $("cohort-prev").disabled = data.offset === 0;
  $("cohort-next").disabled = data.offset + COHORT_PAGE >= data.total;
}

// The API fields that count the wider tiers ``tiers`` too (as the CLI's --include-uncertain
// and --context): hedged mentions, and the contexts (indication, historical, ...).
function tierFields(tiers) {
  const fields = {};
  if (tiers.includes("hedged")) fields.include_uncertain = true;
  const context = tiers.filter((t) => t !== "hedged");
  if (context.length) fields.context = context.join(",");
  return fields;
}

// Which tiers the cohort counted, and one checkbox per tier: checked for a wider tier counted
// now, unchecked beside "+4 reports if stated only as the reason for the exam counts".
function showTiers(data) {
  const level = ["patient", "visit", "report"].includes(data.level) ? data.level : "report";
  $("cohort-counted").textContent = "Tiers counted: " + data.counted_tiers.join(", ") +
    (state.cohortTiers.length ? "" : " (asserted now: the strict count)");
  const box = (tier, checked, text) => {
    const input = el("input", { type: "checkbox", "data-tier": tier });
    input.checked = checked;
    input.addEventListener("change", () => {
      state.cohortTiers = input.checked ? [...state.cohortTiers, tier] : state.cohortTiers.filter((t) => t !== tier);
      state.cohortOffset = 0;
      cohort();
    });
    return el("label", { class: "tier-choice" }, input, " " + text);
  };
  const counted = state.cohortTiers.filter((t) => data.counted_tiers.includes(t))
    .map((t) => box(t, true, `${t} counted (uncheck to leave it out)`));
  const wider = data.wider_tiers.map((t) => {
    const n = t.adds[level];
    const plural = n === 1 ? "" : "s";
    return box(t.tier, false, `+${countText(n, data.count_threshold)} ${level}${plural} if ${t.label} counts`);
  });
  $("cohort-wider").replaceChildren(...counted, ...wider);
  $("cohort-tiers").hidden = false;
}

async function downloadCsv() {
  showError("cohort-error", "");
  const q = state.cohort;
  try {
    const params = new URLSearchParams({ query: q.query, level: q.level });
    if (q.list_id) params.set("list_id", q.list_id);
    if (q.context) params.set("context", q.context);
    if (q.include_uncertain) params.set("include_uncertain", "true");
    const response = await api("/api/cohort/export?" + params, { raw: true });
    await saveDownload(response, `cohort-${q.level}s.csv`);
  } catch (e) { showError("cohort-error", e); }
}

// Save an API download under the name its Content-Disposition gives (else ``fallback``).
async function saveDownload(response, fallback) {
  const file = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
  saveBlob(await response.blob(), file ? file[1] : fallback);
}

function saveBlob(blob, name) {
  const link = el("a", { href: URL.createObjectURL(blob), download: name });
  document.body.append(link); link.click(); link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}

// ---- report viewer --------------------------------------------------------------------------
async function openReport(id, names = []) {
  selectTab($("tab-report"));
  $("report-id").value = id;
  setUrl("report", new URLSearchParams({ id, hits: names.join(",") }));
  showError("report-error", "");
  let data;
  try { data = await api("/api/reports/" + encodeURIComponent(id)); }
  catch (e) { showError("report-error", e); $("report-view").replaceChildren(); return; }
  const r = data.report;
  const dl = el("dl");
  for (const [k, v] of [["report", r.id], ["patient", r.patient_id], ["visit", r.visit_id], ["type", r.type], ["date", r.date || "—"],
                        ["sections", data.sections.map((s) => s.name || "(untitled)").join(", ")]]) dl.append(el("dt", { text: k }), el("dd", { text: v }));
  const text = el("div", { class: "text", tabindex: "0", "aria-label": "report text with findings marked" },
    marked(r.text, findingsShown(data.findings), hitRanges(data.findings, names)));
  const table = el("table", {}, el("caption", { text: `${data.findings.length} findings` }),
    el("thead", {}, el("tr", {}, ...["sentence", "as written", "concept", "polarity", "context", "trigger", "modifiers", "pattern"].map((c) => el("th", { scope: "col", text: c })))));
  const body = el("tbody");
  for (const f of data.findings) {
    body.append(el("tr", {}, el("td", { text: f.sentence_id }), el("td", {}, el("span", { class: "f-" + f.polarity, text: f.text })),
      el("td", { text: f.name }), el("td", { text: f.polarity }), el("td", { text: (f.context || []).join(", ") }),
      el("td", { class: "trigger", text: triggerText(f.trigger) }),
      el("td", { text: (f.modifiers || []).map((m) => `${m.category}: ${m.value}`).join("; ") }), el("td", { text: f.pattern })));
  }
  table.append(body);
  $("report-view").replaceChildren(el("h2", { text: `Report ${r.id}` }), dl,
    hitStepper(text, hitRanges(data.findings, names)), text, table);
  text.focus();
}

// Anatomy on its own ("heart", "lungs") is not marked as a finding.
function findingsShown(findings) { return findings.filter((f) => f.type !== "anatomy"); }

// ---- explain --------------------------------------------------------------------------------
async function explain(q) {
  selectTab($("tab-explain"));
  $("explain-q").value = q;
  showError("explain-error", "");
  let data;
  try { data = await api("/api/explain-query?" + new URLSearchParams({ q })); }
  catch (e) { showError("explain-error", e); return; }
  const groups = el("table", {}, el("caption", { text: "Finding patterns (a hit must match one group)" }),
    el("thead", {}, el("tr", {}, ...["group", "pattern", "polarity", "modifiers", "as written", "also matches"].map((c) => el("th", { scope: "col", text: c })))));
  const body = el("tbody");
  data.groups.forEach((group, i) => group.forEach((p) => body.append(el("tr", {}, el("td", { text: String(i + 1) }),
    el("td", {}, el("span", { class: "f-" + p.polarity, text: p.pattern })), el("td", { text: [p.polarity, ...p.context].join(", ") }),
    el("td", { text: p.modifiers.map((m) => `${m.category}: ${m.value}`).join("; ") }), el("td", { text: p.text }),
    el("td", { text: p.also_matches.join(", ") })))));
  groups.append(body);
  const parts = [groups];
  if (data.unknown_words.length) {
    const unknown = el("table", {}, el("caption", { text: "Words the lexicon does not know, mapped by similarity" }),
      el("thead", {}, el("tr", {}, ...["phrase", "used", "nearest lexicon terms"].map((c) => el("th", { scope: "col", text: c })))));
    unknown.append(el("tbody", {}, ...data.unknown_words.map((w) => el("tr", {}, el("td", { text: w.phrase }),
      el("td", { text: w.used ? "yes" : "no" }), el("td", { text: w.nearest.map((n) => `${n.term} (${n.similarity})`).join(", ") })))));
    parts.push(unknown);
  }
  if (!data.groups.length) parts.unshift(el("p", { text: "No finding pattern: concept search finds nothing for this query." }));
  $("explain-view").replaceChildren(...parts);
}

// ---- wiring ---------------------------------------------------------------------------------
document.addEventListener("DOMContentLoaded", () => {
  for (const legend of document.querySelectorAll(".legend")) legend.append($("legend-template").content.cloneNode(true));
  $("login-form").addEventListener("submit", (e) => {
    e.preventDefault(); showError("login-error", "");
    session.set($("token").value.trim(), $("purpose").value.trim()); $("token").value = ""; enter();
  });
  $("sign-out").addEventListener("click", () => signOut(""));
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  for (const tab of tabs) {
    tab.addEventListener("click", () => selectTab(tab));
    tab.addEventListener("keydown", (e) => {
      const visible = tabs.filter((t) => !t.hidden);
      const i = visible.indexOf(tab);
      if (e.key === "ArrowRight") selectTab(visible[(i + 1) % visible.length]);
      else if (e.key === "ArrowLeft") selectTab(visible[(i - 1 + visible.length) % visible.length]);
    });
  }
  $("search-form").addEventListener("submit", (e) => { e.preventDefault(); state.offset = 0; search(); });
  $("prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - Number($("per-page").value)); search(); });
  $("next").addEventListener("click", () => { state.offset += Number($("per-page").value); search(); });
  $("group").addEventListener("change", () => { if ($("results").children.length) search(); });
  $("explain-this").addEventListener("click", () => { if ($("q").value.trim()) explain($("q").value.trim()); });
  $("cohort-form").addEventListener("submit", (e) => { e.preventDefault(); state.cohortOffset = 0; cohort(); });
  $("cohort-query").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); $("cohort-form").requestSubmit(); } });
  $("cohort-prev").addEventListener("click", () => { state.cohortOffset = Math.max(0, state.cohortOffset - COHORT_PAGE); cohort(); });
  $("cohort-next").addEventListener("click", () => { state.cohortOffset += COHORT_PAGE; cohort(); });
  $("cohort-csv").addEventListener("click", downloadCsv);
  $("report-form").addEventListener("submit", (e) => { e.preventDefault(); openReport($("report-id").value.trim()); });
  $("explain-form").addEventListener("submit", (e) => { e.preventDefault(); explain($("explain-q").value.trim()); });
  document.addEventListener("keydown", (e) => {  // "/" jumps to the search box
    if (e.key === "/" && !["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName) && !$("main").hidden) {
      e.preventDefault(); selectTab($("tab-search")); $("q").focus();
    }
  });
  start();
});

// A count the server withheld from the viewer role (below its threshold) reads "fewer than N".
function countText(count, threshold) {
  return count === null || count === undefined ? `fewer than ${threshold}` : count.toLocaleString();
}

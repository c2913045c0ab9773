// clinsearch workbench: the page's state in its URL, term bundles, id lists, saved cohorts and
// history, patient timelines, cohort charts (hand-made SVG) and the admin audit viewer. Uses
// app.js's helpers ($, el, api, state, selectTab, search, cohort, openReport, saveDownload).
"use strict";

const bench = { bundles: [], lists: [], restoring: false, auditCalls: 0 };
const SVG = () => $("svg-namespace").namespaceURI;  // the HTML parser's SVG namespace
const VIEWS = { search: "tab-search", cohort: "tab-cohort", report: "tab-report", patient: "tab-patient",
                bundles: "tab-bundles", lists: "tab-lists", saved: "tab-saved", audit: "tab-audit" };

// ---- the URL ---------------------------------------------------------------------------------
// Every view is a URL (?view=cohort&query=...): reloading it, or opening it as another user of
// the same role on the same server, shows the same view. The token never goes into the URL.
function setUrl(view, params) {
  if (bench.restoring) return;
  const next = new URLSearchParams({ view });
  for (const [k, v] of params) if (v !== "" && v !== undefined && v !== null) next.set(k, v);
  if (location.search !== "?" + next) history.pushState(null, "", "?" + next);
}

function cohortUrlParams(body) {
  const p = new URLSearchParams({ query: body.query, level: body.level, offset: body.offset });
  if (body.list_id) p.set("list", body.list_id);
  if (body.context) p.set("context", body.context);
  if (body.include_uncertain) p.set("include_uncertain", "true");
  return p;
}

async function restoreFromUrl() {
  const p = new URLSearchParams(location.search);
  const view = p.get("view");
  if (!view || !VIEWS[view] || $(VIEWS[view]).hidden) return;
  bench.restoring = true;
  try {
    if (view === "search" && p.get("q")) {
      const fields = { q: "q", method: "method", level: "level", polarity: "polarity", context: "context",
                       date_from: "date-from", date_to: "date-to", section: "section", type: "type", top: "per-page" };
      for (const [name, id] of Object.entries(fields)) $(id).value = p.get(name) || $(id).value;
      $("filters").open = ["context", "date_from", "date_to", "section", "type"].some((k) => p.get(k)) || $("filters").open;
      state.offset = Number(p.get("offset") || 0);
      selectTab($("tab-search"));
      await search();
    } else if (view === "cohort" && p.get("query")) {
      $("cohort-query").value = p.get("query");
      $("cohort-level").value = p.get("level") || "patient";
      chooseList(p.get("list") || "");
      state.cohortTiers = [...(p.get("include_uncertain") === "true" ? ["hedged"] : []),
                           ...(p.get("context") || "").split(",").filter(Boolean)];
      state.cohortOffset = Number(p.get("offset") || 0);
      selectTab($("tab-cohort"));
      await cohort();
    } else if (view === "report" && p.get("id")) {
      await openReport(p.get("id"), (p.get("hits") || "").split(",").filter(Boolean));
    } else if (view === "patient" && p.get("id")) {
      await openTimeline(p.get("id"), p.get("query") || "");
    } else {
      selectTab($(VIEWS[view]));
      await loadView(view);
    }
  } finally { bench.restoring = false; }
}

async function loadView(view) {
  if (view === "bundles") await loadBundles();
  else if (view === "lists") await loadLists();
  else if (view === "saved") await loadSaved();
  else if (view === "audit") await loadAudit();
}

async function entered() {
  const role = state.info.user.role;
  $("tab-audit").hidden = role !== "admin";
  $("tab-patient").hidden = $("tab-lists").hidden = role === "viewer";
  $("cohort-list").disabled = role === "viewer";
  await Promise.all([loadBundles(), role === "viewer" ? null : loadLists()]);
  await restoreFromUrl();
}

// ---- charts (SVG drawn here; numbers in data attributes for tests and screen readers) --------
function barChart(title, counts, classOf = () => "bar") {
  const entries = Object.entries(counts);
  const rowH = 20, labelW = 120, barW = 220, numW = 50;
  const max = Math.max(1, ...entries.map(([, v]) => v));
  const svg = document.createElementNS(SVG(), "svg");
  const height = rowH * entries.length + 4;
  svg.setAttribute("viewBox", `0 0 ${labelW + barW + numW} ${height}`);
  svg.setAttribute("width", labelW + barW + numW); svg.setAttribute("height", height);
  svg.setAttribute("role", "img"); svg.setAttribute("aria-label", title);
  entries.forEach(([label, value], i) => {
    const g = document.createElementNS(SVG(), "g");
    g.setAttribute("class", "bar"); g.dataset.label = label; g.dataset.value = value;
    const y = i * rowH + 2;
    const name = document.createElementNS(SVG(), "text");
    name.setAttribute("x", labelW - 6); name.setAttribute("y", y + 14); name.setAttribute("text-anchor", "end");
    name.textContent = label.length > 18 ? label.slice(0, 17) + "…" : label;
    const rect = document.createElementNS(SVG(), "rect");
    rect.setAttribute("x", labelW); rect.setAttribute("y", y + 2); rect.setAttribute("height", rowH - 5);
    rect.setAttribute("width", Math.max(1, Math.round(barW * value / max)));
    rect.setAttribute("class", classOf(label));
    const tip = document.createElementNS(SVG(), "title"); tip.textContent = `${label}: ${value}`;
    rect.append(tip);
    const num = document.createElementNS(SVG(), "text");
    num.setAttribute("x", labelW + Math.round(barW * value / max) + 4); num.setAttribute("y", y + 14);
    num.textContent = value === null ? "few" : String(value);  // withheld for the viewer role
    g.append(name, rect, num);
    svg.append(g);
  });
  return el("figure", { class: "chart" }, el("figcaption", { text: title }), svg);
}

async function drawCohortCharts(body) {
  const request = { query: body.query };
  if (body.list_id) request.list_id = body.list_id;
  if (body.context) request.context = body.context;
  if (body.include_uncertain) request.include_uncertain = true;
  let data;
  try { data = await api("/api/charts/cohort", { method: "POST", json: request }); }
  catch (e) { $("cohort-charts").hidden = true; return; }
  bench.chart = data;
  $("cohort-charts").hidden = false;
  drawDateChart();
  $("chart-type").replaceChildren(barChart("Reports by report type", data.type));
  $("chart-section").replaceChildren(barChart("Reports by section of the evidence", data.section));
}

function drawDateChart() {
  const grain = $("chart-grain").value;
  $("chart-date").replaceChildren(barChart(`Reports by ${grain}`, bench.chart[grain]));
}

async function polarityMix(term) {
  showError("mix-error", "");
  const params = new URLSearchParams({ term });
  if (state.cohort && state.cohort.list_id) params.set("list_id", state.cohort.list_id);
  let data;
  try { data = await api("/api/charts/polarity?" + params); }
  catch (e) { showError("mix-error", e); $("chart-mix").replaceChildren(); return; }
  $("chart-mix").replaceChildren(barChart(`Reports stating "${term}"`, data.reports, (label) => "bar p-" + label));
}

// ---- hits inside a report ----------------------------------------------------------------------
// A report opened from a hit marks that hit's findings wherever the report states them, and
// "Previous hit" / "Next hit" move between them.
function hitNames(hit) {
  const shown = findingsShown(hit.findings);
  const hl = hit.highlights || [];
  const touched = shown.filter((f) => hl.some(([s, e]) => s < f.end && f.start < e));
  return [...new Set((touched.length ? touched : shown).map((f) => f.name))];
}

function hitRanges(findings, names) {
  const wanted = new Set(names);
  return findingsShown(findings).filter((f) => wanted.has(f.name)).map((f) => [f.start, f.end])
    .sort((a, b) => a[0] - b[0]);
}

function elementAt(box, offset) {
  let at = 0;
  for (const node of box.childNodes) {
    const length = node.textContent.length;
    if (offset < at + length) return node.nodeType === Node.ELEMENT_NODE ? node : null;
    at += length;
  }
  return null;
}

function hitStepper(box, ranges) {
  if (!ranges.length) return "";
  let current = -1;
  const status = el("span", { class: "hit-status", "aria-live": "polite", text: `${ranges.length} hit${ranges.length > 1 ? "s" : ""} of this finding` });
  const step = (by) => {
    current = (current + by + ranges.length) % ranges.length;
    for (const old of box.querySelectorAll(".current-hit")) old.classList.remove("current-hit");
    const target = elementAt(box, ranges[current][0]);
    if (target) { target.classList.add("current-hit"); target.scrollIntoView({ block: "center" }); }
    status.textContent = `hit ${current + 1} of ${ranges.length}`;
  };
  return el("div", { class: "toolbar hit-stepper" },
    el("button", { type: "button", id: "hit-prev", text: "← Previous hit", onclick: () => step(-1) }),
    el("button", { type: "button", id: "hit-next", text: "Next hit →", onclick: () => step(1) }), status);
}

// ---- patient timeline --------------------------------------------------------------------------
async function openTimeline(id, query) {
  selectTab($("tab-patient"));
  $("patient-id").value = id; $("patient-query").value = query || "";
  showError("patient-error", "");
  let data;
  try { data = await api(`/api/patients/${encodeURIComponent(id)}/timeline?` + new URLSearchParams({ query: query || "" })); }
  catch (e) { showError("patient-error", e); $("patient-view").replaceChildren(); return; }
  setUrl("patient", new URLSearchParams({ id, query: query || "" }));
  const matched = data.reports.filter((r) => r.matched).length;
  const items = data.reports.map((r) => el("li", { class: "visit" + (r.matched ? " matched" : ""), "data-report": r.report_id },
    el("div", { class: "meta" }, el("strong", { text: r.date || "undated" }), el("span", { text: r.type || "" }),
      el("span", { text: `report ${r.report_id}` }), r.matched ? el("span", { class: "badge", text: "matches the query" }) : "",
      el("button", { type: "button", text: "Open report", onclick: () => openReport(r.report_id) })),
    el("p", { class: "chips" }, ...distinctFindings(r.findings).map((f) => el("span", {
      class: `chip f-${f.polarity}${f.context.length ? " ctx" : ""}`, title: `${f.pattern}${f.context.length ? " (" + f.context.join(", ") + ")" : ""}`,
      text: f.name })))));
  $("patient-view").replaceChildren(el("h2", { text: `Patient ${id}` }),
    el("p", { class: "status", text: `${data.reports.length} reports` + (query ? `, ${matched} matching "${query}" (listed first)` : ", by date") }),
    el("ol", { class: "timeline" }, ...items));
}

function distinctFindings(findings) {
  const seen = new Set();
  return findings.filter((f) => {
    const key = `${f.name}|${f.polarity}|${f.context.join(",")}`;
    return !seen.has(key) && seen.add(key);
  });
}

// ---- term bundles --------------------------------------------------------------------------------
async function loadBundles() {
  try { bench.bundles = (await api("/api/bundles")).bundles; }
  catch (e) { showError("bundle-error", e); return; }
  const me = state.info.user.name;
  $("cohort-bundle").replaceChildren(el("option", { value: "", text: "—" }),
    ...bench.bundles.map((b) => el("option", { value: b.name, text: b.name + (b.owner === me ? "" : ` (${b.owner})`) })));
  const rows = bench.bundles.map((b) => el("tr", { "data-bundle": b.name },
    el("th", { scope: "row", text: b.name }), el("td", { text: b.owner + (b.shared ? " · shared" : "") }),
    el("td", {}, ...b.readings.map((r) => el("span", { class: "chip read-" + r.read_as, title: r.read_as === "finding"
      ? "read as a lexicon finding, with its polarity" : "not one finding of the lexicon: matched as text", text: r.term }))),
    el("td", {}, el("button", { type: "button", text: "Use in cohort", onclick: () => useBundle(b.name) }), " ",
      el("button", { type: "button", text: "Export", onclick: () => exportBundle(b.name) }), " ",
      b.owner === me ? el("button", { type: "button", text: "Edit", onclick: () => editBundle(b) }) : "", " ",
      b.owner === me ? el("button", { type: "button", text: "Delete", onclick: () => deleteBundle(b.name) }) : "")));
  $("bundle-list").replaceChildren(bench.bundles.length ? el("table", {},
    el("caption", { text: "Bundles you may use (green: read as a finding; grey: matched as text)" }),
    el("thead", {}, el("tr", {}, ...["bundle", "owner", "terms", ""].map((c) => el("th", { scope: "col", text: c })))),
    el("tbody", {}, ...rows)) : el("p", { text: "No bundles yet." }));
}

async function saveBundle() {
  showError("bundle-error", "");
  const terms = $("bundle-terms").value.split("\n").map((t) => t.trim()).filter(Boolean);
  try {
    await api("/api/bundles/" + encodeURIComponent($("bundle-name").value.trim()),
              { method: "PUT", json: { terms, shared: $("bundle-shared").checked } });
  } catch (e) { showError("bundle-error", e); return; }
  await loadBundles();
}

function editBundle(b) {
  $("bundle-name").value = b.name; $("bundle-terms").value = b.terms.join("\n"); $("bundle-shared").checked = b.shared;
  $("bundle-name").focus();
}

function useBundle(name) {
  const box = $("cohort-query");
  box.value = (box.value.trim() ? box.value.trim() + " AND " : "") + `bundle:"${name}"`;
  selectTab($("tab-cohort"));
  box.focus();
}

async function exportBundle(name) {
  try {
    const response = await api(`/api/bundles/${encodeURIComponent(name)}/export`, { raw: true });
    await saveDownload(response, "bundle.json");
  } catch (e) { showError("bundle-error", e); }
}

async function deleteBundle(name) {
  try { await api("/api/bundles/" + encodeURIComponent(name), { method: "DELETE" }); }
  catch (e) { showError("bundle-error", e); return; }
  await loadBundles();
}

async function importBundle(file) {
  showError("bundle-error", "");
  let body;
  try { body = JSON.parse(await file.text()); }
  catch (e) { showError("bundle-error", `${file.name}: not a JSON bundle file`); return; }
  try { await api("/api/bundles/import", { method: "POST", json: body }); }
  catch (e) { showError("bundle-error", `${file.name}: ${e.message}`); return; }
  $("bundle-file").value = "";
  await loadBundles();
}

// ---- id lists ---------------------------------------------------------------------------------------
async function loadLists() {
  try { bench.lists = (await api("/api/lists")).lists; }
  catch (e) { showError("list-error", e); return; }
  const chosen = $("cohort-list").value;
  const options = () => bench.lists.map((l) => el("option", { value: String(l.id), text: `${l.name} (${l.size} ${l.kind}s)` }));
  $("cohort-list").replaceChildren(el("option", { value: "", text: "all patients" }), ...options());
  chooseList(chosen);
  $("compare-a").replaceChildren(...options()); $("compare-b").replaceChildren(...options());
  if (bench.lists.length > 1) $("compare-b").selectedIndex = 1;
  $("list-table").replaceChildren(bench.lists.length ? el("table", {}, el("caption", { text: "Your id lists" }),
    el("thead", {}, el("tr", {}, ...["list", "ids of", "size", "uploaded", ""].map((c) => el("th", { scope: "col", text: c })))),
    el("tbody", {}, ...bench.lists.map((l) => el("tr", {}, el("th", { scope: "row", text: l.name }), el("td", { text: l.kind + "s" }),
      el("td", { text: String(l.size) }), el("td", { text: l.created.slice(0, 16).replace("T", " ") }),
      el("td", {}, el("button", { type: "button", text: "Restrict a cohort to it", onclick: () => { chooseList(String(l.id)); selectTab($("tab-cohort")); } }),
        " ", el("button", { type: "button", text: "Delete", onclick: () => deleteList(l.id) }))))))
    : el("p", { text: "No lists yet." }));
}

function chooseList(id) {
  const select = $("cohort-list");
  if (id && ![...select.options].some((o) => o.value === id)) select.append(el("option", { value: id, text: `list ${id}` }));
  select.value = id;
}

async function uploadList() {
  showError("list-error", "");
  const file = $("list-file").files[0];
  let data;
  try {
    data = await api("/api/lists", { method: "POST", json: { name: $("list-name").value.trim(), kind: $("list-kind").value, csv: await file.text() } });
  } catch (e) { showError("list-error", e); return; }
  $("list-status").textContent = `${data.name}: ${data.size} ids, ${data.found} in the index` +
    (data.missing ? `, ${data.missing} not found (${data.missing_examples.join(", ")})` : "");
  $("list-form").reset();
  await loadLists();
}

async function deleteList(id) {
  try { await api("/api/lists/" + id, { method: "DELETE" }); } catch (e) { showError("list-error", e); return; }
  await loadLists();
}

async function compareLists() {
  showError("list-error", "");
  let data;
  try { data = await api("/api/lists/compare?" + new URLSearchParams({ a: $("compare-a").value, b: $("compare-b").value })); }
  catch (e) { showError("list-error", e); return; }
  const part = (key, title) => el("td", { "data-part": key }, el("strong", { text: `${data.counts[key]}` }), ` ${title}`,
    el("p", { class: "ids", text: data[key].slice(0, 200).join(", ") }));
  $("compare-view").replaceChildren(el("table", { class: "compare" }, el("caption", { text: `${data.a.name} (A) and ${data.b.name} (B), ${data.kind} ids` }),
    el("tbody", {}, el("tr", {}, part("both", "in both"), part("only_a", "only in A"), part("only_b", "only in B")))));
}

// ---- saved cohorts and history -----------------------------------------------------------------
async function saveItem(kind, params, name, status, error) {
  const page = Object.fromEntries(params);
  delete page.offset; delete page.top;
  try {
    const saved = await api("/api/saved", { method: "POST", json: { name, kind, state: page } });
    $(status).textContent = `saved "${saved.name}" (${saved.counts.patient} patients)`;
  } catch (e) { $(status).textContent = ""; showError(error, e); }
}

function openState(kind, page) {
  const params = new URLSearchParams(Object.assign({ view: kind }, page));
  history.pushState(null, "", "?" + params);
  restoreFromUrl();
}

async function loadSaved() {
  showError("saved-error", "");
  let saved, past;
  try { [saved, past] = await Promise.all([api("/api/saved"), api("/api/history")]); }
  catch (e) { showError("saved-error", e); return; }
  const counts = (c) => ["patient", "visit", "report"].filter((k) => k in c).map((k) => `${c[k]} ${k}s`).join(" · ") ||
    Object.entries(c).map(([k, v]) => `${k} ${v}`).join(" · ");
  $("saved-view").replaceChildren(el("table", {}, el("caption", { text: "Saved searches and cohorts" }),
    el("thead", {}, el("tr", {}, ...["name", "kind", "query", "when saved", "counts then", ""].map((c) => el("th", { scope: "col", text: c })))),
    el("tbody", {}, ...saved.saved.map((s) => el("tr", { "data-saved": s.name }, el("th", { scope: "row", text: s.name }),
      el("td", { text: s.kind }),
      el("td", {}, el("code", { text: s.state.query || s.state.q }), s.state.list ? ` (list ${s.state.list})` : ""),
      el("td", { text: s.created.slice(0, 16).replace("T", " ") }), el("td", { text: counts(s.counts) }),
      el("td", {}, el("button", { type: "button", text: "Open", onclick: () => openState(s.kind, s.state) }), " ",
        el("button", { type: "button", text: "Rerun", onclick: () => rerun(s) }), " ",
        el("button", { type: "button", text: "Delete", onclick: () => deleteSaved(s.id) })))))));
  $("history-view").replaceChildren(el("table", {}, el("caption", { text: "Your latest queries" }),
    el("thead", {}, el("tr", {}, ...["when", "kind", "query", "counts", ""].map((c) => el("th", { scope: "col", text: c })))),
    el("tbody", {}, ...past.history.map((h) => el("tr", {}, el("td", { text: h.time.slice(0, 19).replace("T", " ") }),
      el("td", { text: h.kind }), el("td", {}, el("code", { text: h.state.query || h.state.q || "" })),
      el("td", { text: counts(h.counts) }),
      el("td", {}, el("button", { type: "button", text: "Open", onclick: () => openState(h.kind, h.state) })))))));
}

async function rerun(saved) {
  let data;
  try { data = await api(`/api/saved/${saved.id}/rerun`, { method: "POST" }); }
  catch (e) { showError("saved-error", e); return; }
  const rows = ["patient", "visit", "report"].map((k) => el("tr", {}, el("th", { scope: "row", text: k + "s" }),
    el("td", { text: String(data.counts_then[k]) }), el("td", { text: String(data.counts_now[k]) }),
    el("td", { text: (data.counts_now[k] - data.counts_then[k] >= 0 ? "+" : "") + (data.counts_now[k] - data.counts_then[k]) })));
  $("rerun-view").replaceChildren(el("table", { class: "rerun" }, el("caption", { text: `"${saved.name}" then and now` }),
    el("thead", {}, el("tr", {}, ...["", "when saved", "now", "change"].map((c) => el("th", { scope: "col", text: c })))),
    el("tbody", {}, ...rows)), el("p", { text: `${data.added} patients added (${data.added_ids.join(", ") || "none"}), ` +
      `${data.removed} removed (${data.removed_ids.join(", ") || "none"})` }));
}

async function deleteSaved(id) {
  try { await api("/api/saved/" + id, { method: "DELETE" }); } catch (e) { showError("saved-error", e); return; }
  await loadSaved();
}

// ---- audit viewer (admins) ------------------------------------------------------------------------
function auditParams() {
  const p = new URLSearchParams({ limit: 100 });
  const fields = { user: "audit-user", purpose: "audit-purpose", endpoint: "audit-endpoint", date_from: "audit-from", date_to: "audit-to" };
  for (const [name, id] of Object.entries(fields)) if ($(id).value.trim()) p.set(name, $(id).value.trim());
  return p;
}

async function loadAudit() {
  showError("audit-error", "");
  const params = new URLSearchParams(location.search);
  if (params.get("view") === "audit" && bench.restoring) {
    const fields = { user: "audit-user", purpose: "audit-purpose", endpoint: "audit-endpoint", date_from: "audit-from", date_to: "audit-to" };
    for (const [name, id] of Object.entries(fields)) $(id).value = params.get(name) || "";
  }
  const call = ++bench.auditCalls;  // an older answer arriving late is dropped
  let data;
  try { data = await api("/api/audit?" + auditParams()); }
  catch (e) { showError("audit-error", e); return; }
  if (call !== bench.auditCalls) return;
  const query = auditParams(); query.delete("limit");
  setUrl("audit", query);
  $("audit-status").textContent = `${data.total} records match (newest first)`;
  $("audit-view").replaceChildren(el("table", {}, el("thead", {}, el("tr", {}, ...["#", "time (UTC)", "user", "role", "purpose", "endpoint", "parameters", "counts"]
    .map((c) => el("th", { scope: "col", text: c })))),
    el("tbody", {}, ...data.records.map((r) => el("tr", {}, el("td", { text: String(r.seq) }), el("td", { text: r.time }),
      el("td", { text: r.user }), el("td", { text: r.role }), el("td", { text: r.purpose }), el("td", { text: r.endpoint }),
      el("td", {}, el("code", { text: JSON.stringify(r.params) })), el("td", { text: JSON.stringify(r.counts) }))))));
}

async function verifyAudit() {
  let data;
  try { data = await api("/api/audit/verify"); } catch (e) { showError("audit-error", e); return; }
  $("audit-status").textContent = data.ok ? `chain intact: ${data.records} records verified`
    : `TAMPERED: ${data.problems.length} problems`;
  showError("audit-error", data.ok ? "" : data.problems.join("\n"));
}

// ---- wiring ---------------------------------------------------------------------------------------
document.addEventListener("DOMContentLoaded", () => {
  window.addEventListener("popstate", () => { if (!$("main").hidden) restoreFromUrl(); });
  $("patient-form").addEventListener("submit", (e) => { e.preventDefault(); openTimeline($("patient-id").value.trim(), $("patient-query").value.trim()); });
  $("bundle-form").addEventListener("submit", (e) => { e.preventDefault(); saveBundle(); });
  $("bundle-file").addEventListener("change", () => { if ($("bundle-file").files[0]) importBundle($("bundle-file").files[0]); });
  $("cohort-bundle").addEventListener("change", () => { if ($("cohort-bundle").value) useBundle($("cohort-bundle").value); $("cohort-bundle").value = ""; });
  $("list-form").addEventListener("submit", (e) => { e.preventDefault(); uploadList(); });
  $("compare-form").addEventListener("submit", (e) => { e.preventDefault(); compareLists(); });
  $("save-form").addEventListener("submit", (e) => {
    e.preventDefault(); saveItem("cohort", cohortUrlParams(state.cohort), $("save-name").value.trim(), "save-status", "cohort-error");
  });
  $("save-search-form").addEventListener("submit", (e) => {
    e.preventDefault(); saveItem("search", searchParams(), $("save-search-name").value.trim(), "save-search-status", "search-error");
  });
  $("chart-grain").addEventListener("change", drawDateChart);
  $("mix-form").addEventListener("submit", (e) => { e.preventDefault(); polarityMix($("mix-term").value.trim()); });
  $("audit-form").addEventListener("submit", (e) => { e.preventDefault(); loadAudit(); });
  $("audit-verify").addEventListener("click", verifyAudit);
  for (const [view, tab] of Object.entries(VIEWS)) {
    if (["bundles", "lists", "saved", "audit"].includes(view)) {
      $(tab).addEventListener("click", () => { setUrl(view, new URLSearchParams()); loadView(view); });
    }
  }
});

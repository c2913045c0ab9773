// clinsearch chart review: draw a fixed sample of a saved cohort, read each report blind (the
// finding marked, not the engine's reading), record a verdict and a short note, and show
// precision with its Wilson 95% interval, kappa and the recall estimate beside the exact
// counts. Uses app.js's helpers ($, el, api, marked, showError, openReport, saveDownload).
"use strict";

const rv = { review: null, current: null };
const VERDICT_LABELS = { meets: "Meets", does_not_meet: "Does not meet", cannot_tell: "Cannot tell" };

// Figures as the CLI prints them: three decimals, "n/a" when undefined.
function share(value) { return value === null || value === undefined ? "n/a" : value.toFixed(3); }

function setFigure(id, text, value) {
  $(id).textContent = text;
  $(id).dataset.value = value === null || value === undefined ? "" : String(value);
}

async function loadReviews() {
  showError("review-error", "");
  const viewer = state.info.user.role === "viewer";
  $("review-form").hidden = viewer;
  let listed;
  try {
    listed = await api("/api/reviews");
    if (!viewer) {
      const saved = (await api("/api/saved")).saved.filter((s) => s.kind === "cohort");
      $("review-saved").replaceChildren(...saved.map((s) =>
        el("option", { value: String(s.id), text: `${s.name} (${s.state.query})` })));
    }
  } catch (e) { showError("review-error", e); return; }
  $("review-list").replaceChildren(el("table", {}, el("caption", { text: "Reviews you own or are listed on" }),
    el("thead", {}, el("tr", {}, ...["name", "cohort", "owner", "drawn", "precision", ""].map((c) => el("th", { scope: "col", text: c })))),
    el("tbody", {}, ...listed.reviews.map((r) => el("tr", { "data-review": String(r.id) },
      el("th", { scope: "row", text: r.name }), el("td", {}, el("code", { text: r.query })),
      el("td", { text: r.owner }), el("td", { text: r.created.slice(0, 16).replace("T", " ") }),
      el("td", { class: "precision", text: share(r.figures.precision) }),
      el("td", {}, el("button", { type: "button", text: "Open", onclick: () => openReview(r.id) })))))));
}

async function drawReview() {
  showError("review-error", "");
  const body = {
    saved_id: Number($("review-saved").value), size: $("review-all").checked ? null : Number($("review-size").value),
    seed: Number($("review-seed").value), strata: $("review-strata").value,
    nonmembers: Number($("review-nonmembers").value), second_reviewer: $("review-second").checked,
    blind: !$("review-open").checked,
    reviewers: $("review-reviewers").value.split(/[\s,]+/).filter(Boolean),
  };
  try {
    const review = await api("/api/reviews", { method: "POST", json: body });
    await loadReviews();
    await openReview(review.id);
  } catch (e) { showError("review-error", e); }
}

async function openReview(id) {
  showError("review-error", "");
  let review;
  try { review = await api(`/api/reviews/${id}`); } catch (e) { showError("review-error", e); return; }
  rv.review = review; rv.current = null;
  $("review-view").hidden = false;
  $("review-view").dataset.review = String(id);
  $("review-title").textContent = `${review.name}: ${review.query}` + (review.blind ? " (blind)" : "");
  showFigures(review.figures, review.counts);
  $("review-owner").hidden = !review.is_owner;
  $("review-changes").replaceChildren();
  $("review-reader").replaceChildren();
  showItems();
  $("review-disagreements").replaceChildren();
  $("review-rejected").replaceChildren();
  if (review.is_owner) await Promise.all([loadDisagreements(), loadRejected()]);
}

function showFigures(f, counts) {
  const listed = document.querySelector(`#review-list tr[data-review="${rv.review.id}"] td.precision`);
  if (listed) listed.textContent = share(f.precision);
  for (const unit of ["patient", "visit", "report"]) {  // null: withheld from the viewer role (small)
    setFigure("rv-" + unit, counts[unit] === null ? "few" : String(counts[unit] ?? ""), counts[unit]);
  }
  setFigure("rv-precision", share(f.precision), f.precision);
  $("rv-interval").textContent = f.precision === null ? "n/a" : `${share(f.precision_low)}-${share(f.precision_high)}`;
  $("rv-interval").dataset.low = String(f.precision_low ?? "");
  $("rv-interval").dataset.high = String(f.precision_high ?? "");
  setFigure("rv-kappa", share(f.kappa), f.kappa);
  setFigure("rv-recall", f.nonmembers_sampled ? `${share(f.recall)} (${share(f.recall_low)}-${share(f.recall_high)})` : "not sampled", f.recall);
  $("rv-detail").textContent = `${f.meets} of ${f.meets + f.does_not_meet} judged members meet; sampled ${f.sampled} of ` +
    `${f.members} member reports; cannot tell ${f.cannot_tell}, disputed ${f.disputed}, pending ${f.pending}; ` +
    `kappa over ${f.kappa_items} reports judged by two reviewers` +
    (f.nonmembers_sampled ? `; ${f.nonmembers_meet} of ${f.nonmembers_judged} judged non-members meet (of ${f.nonmember_pool} that mention the finding)` : "");
}

function showItems() {
  const items = rv.review.items || [];
  $("review-items").replaceChildren(...items.map((item) => el("li", {},
    el("button", { type: "button", "data-report": item.report_id, "data-verdict": item.verdict || "",
                   class: item.verdict ? "done" : "",
                   text: item.report_id + (item.kind ? ` (${item.kind === "member" ? "member" : "non-member"})` : ""),
                   "aria-current": String(item.report_id === rv.current),
                   onclick: () => readItem(item.report_id) }))));
}

async function readItem(reportId) {
  showError("review-error", "");
  let data;
  try { data = await api(`/api/reviews/${rv.review.id}/reports/${encodeURIComponent(reportId)}`); }
  catch (e) { showError("review-error", e); return; }
  rv.current = reportId;
  showItems();
  const text = el("div", { class: "text", tabindex: "0", "aria-label": "report text, the finding marked" },
    marked(data.text, [], data.highlights.map((h) => [h.start, h.end])));
  const note = el("input", { id: "review-note", maxlength: "500", size: "40", placeholder: "short reason (e.g. hedge, negated)" });
  note.value = data.note || "";
  const buttons = Object.entries(VERDICT_LABELS).map(([verdict, label]) => el("button", {
    type: "button", id: "verdict-" + verdict, text: label, "aria-pressed": String(data.verdict === verdict),
    onclick: () => judge(reportId, verdict, note.value) }));
  const engine = data.kind ? [el("p", { class: "engine", text: data.kind === "member"
    ? `The engine counts it a member (evidence sentence ${data.evidence_sentence_id}).` : "The engine leaves it out of the cohort." })] : [];
  $("review-reader").replaceChildren(el("h3", { text: `Report ${data.report_id}` + (data.date ? ` (${data.date})` : "") }),
    ...engine, text, el("div", { class: "toolbar", role: "group", "aria-label": "verdict" },
      el("label", { for: "review-note", text: "Note" }), note, ...buttons));
  text.focus();
}

async function judge(reportId, verdict, note) {
  showError("review-error", "");
  let answer;
  try {
    answer = await api(`/api/reviews/${rv.review.id}/judgments/${encodeURIComponent(reportId)}`,
      { method: "PUT", json: { verdict, note } });
  } catch (e) { showError("review-error", e); return; }
  const item = rv.review.items.find((i) => i.report_id === reportId);
  item.verdict = verdict; item.note = note;
  showFigures(answer.figures, rv.review.counts);
  const next = rv.review.items.find((i) => !i.verdict);
  if (next) await readItem(next.report_id);
  else { rv.current = null; showItems(); $("review-reader").replaceChildren(el("p", { id: "review-done", text: "Every sampled report is judged." })); }
  if (rv.review.is_owner) await Promise.all([loadDisagreements(), loadRejected()]);
}

async function loadDisagreements() {
  const listed = (await api(`/api/reviews/${rv.review.id}/disagreements`)).disagreements;
  if (!listed.length) { $("review-disagreements").replaceChildren(); return; }
  $("review-disagreements").replaceChildren(el("table", {}, el("caption", { text: "Disagreements to settle" }),
    el("thead", {}, el("tr", {}, ...["report", "verdicts", "notes", "settle as"].map((c) => el("th", { scope: "col", text: c })))),
    el("tbody", {}, ...listed.map((d) => el("tr", { "data-report": d.report_id },
      el("th", { scope: "row", text: d.report_id }),
      el("td", { text: Object.entries(d.verdicts).map(([who, v]) => `${who}: ${VERDICT_LABELS[v] || v}`).join("; ") }),
      el("td", { text: d.notes.join(" | ") }),
      el("td", {}, ...Object.entries(VERDICT_LABELS).map(([verdict, label]) => el("button", {
        type: "button", text: label, onclick: () => adjudicate(d.report_id, verdict) }))))))));
}

async function adjudicate(reportId, verdict) {
  try {
    const answer = await api(`/api/reviews/${rv.review.id}/adjudications/${encodeURIComponent(reportId)}`,
      { method: "PUT", json: { verdict, note: "" } });
    showFigures(answer.figures, rv.review.counts);
    await Promise.all([loadDisagreements(), loadRejected()]);
  } catch (e) { showError("review-error", e); }
}

async function loadRejected() {
  const listed = (await api(`/api/reviews/${rv.review.id}/rejected`)).rejected;
  if (!listed.length) { $("review-rejected").replaceChildren(); return; }
  $("review-rejected").replaceChildren(el("table", {}, el("caption", { text: "Members judged not to meet: where the engine read them" }),
    el("thead", {}, el("tr", {}, ...["report", "evidence sentence", "matched", "trigger", "reason"].map((c) => el("th", { scope: "col", text: c })))),
    el("tbody", {}, ...listed.map((r) => el("tr", { "data-report": r.report_id },
      el("th", { scope: "row" }, el("button", { type: "button", text: r.report_id, onclick: () => openReport(r.report_id) })),
      el("td", { text: r.sentence }), el("td", { text: r.matched }), el("td", { class: "trigger", text: r.trigger }),
      el("td", { class: "reason", text: r.reason }))))));
}

async function reviewDownload(path, fallback) {
  try { await saveDownload(await api(path, { raw: true }), fallback); }
  catch (e) { showError("review-error", e); }
}

async function rerunReview() {
  try {
    const c = await api(`/api/reviews/${rv.review.id}/rerun`, { method: "POST" });
    $("review-changes").replaceChildren(el("p", { id: "review-changes-text", text:
      `Generation ${c.generation_then} → ${c.generation_now}: ${c.members_then} → ${c.members_now} member reports; ` +
      `entered ${c.entered.length}, left ${c.left.length}` +
      (c.sampled_left.length ? `; sampled reports no longer members: ${c.sampled_left.join(", ")}` : "; every sampled member still in") }));
  } catch (e) { showError("review-error", e); }
}

document.addEventListener("DOMContentLoaded", () => {
  $("tab-review").addEventListener("click", loadReviews);
  $("review-form").addEventListener("submit", (e) => { e.preventDefault(); drawReview(); });
  $("review-all").addEventListener("change", () => { $("review-size").disabled = $("review-all").checked; });
  $("review-export").addEventListener("click", () => reviewDownload(`/api/reviews/${rv.review.id}/export`, "review.csv"));
  $("review-rejected-csv").addEventListener("click", () => reviewDownload(`/api/reviews/${rv.review.id}/rejected?format=csv`, "rejected.csv"));
  $("review-rerun").addEventListener("click", rerunReview);
});

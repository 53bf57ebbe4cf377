// scoi coverage page: plain JavaScript over the /api endpoints, no build step.
"use strict";

const COLORS = ["--c0", "--c1", "--c2", "--c3", "--c4", "--c5", "--c6", "--c7"].map(
  (v) => getComputedStyle(document.documentElement).getPropertyValue(v).trim());
const color = (i) => COLORS[i % COLORS.length];
const $ = (sel) => document.querySelector(sel);
const state = { config: null, jobId: null, offset: 0, limit: 50, timer: null };

// ------------------------------------------------------------------ helpers
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "style") node.style.cssText = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function banner(message) {
  const b = $("#banner");
  b.textContent = message || "";
  b.hidden = !message;
}

async function api(path, options = {}) {
  const headers = { "Accept": "application/json", ...(options.headers || {}) };
  const token = sessionStorage.getItem("scoi-token");
  if (token) headers["Authorization"] = "Bearer " + token;
  if (options.body && typeof options.body !== "string") {
    headers["Content-Type"] = "application/json";
    options = { ...options, body: JSON.stringify(options.body) };
  }
  const r = await fetch(path, { ...options, headers });
  let data = null;
  try { data = await r.json(); } catch (e) { data = { error: `HTTP ${r.status}` }; }
  if (r.status === 401) $("#token-box").hidden = false;
  if (!r.ok) throw new Error(data && data.error ? data.error : `HTTP ${r.status}`);
  return data;
}

function fillSelect(select, values, chosen) {
  select.replaceChildren(...values.map((v) => el("option", { value: v, selected: v === chosen ? "" : null }, v)));
}

function fmt(x, digits = 3) { return x === null || x === undefined ? "–" : Number(x).toFixed(digits); }

// ------------------------------------------------------------------ tabs
function show(view) {
  document.querySelectorAll(".tab").forEach((t) => {
    const on = t.dataset.view === view;
    t.classList.toggle("active", on);
    t.setAttribute("aria-selected", on);
  });
  document.querySelectorAll(".view").forEach((v) => { v.hidden = v.id !== "view-" + view; });
  if (view === "jobs") loadJobs();
  if (view === "gaps") loadGapJobs();
  banner("");
}

// ------------------------------------------------------------------ coverage
/** The chosen glossary as a request field ({} when none is chosen). */
function glossaryField() { return $("#glossary").value ? { glossary: $("#glossary").value } : {}; }

/** The glossary terms found in the sentence (docs/glossary.md), as chips "source → target". */
function renderGlossary(terms) {
  const box = $("#glossary-terms");
  box.hidden = terms === undefined;
  if (terms === undefined) return;
  box.replaceChildren(el("strong", {}, "Glossary terms: "), ...(terms.length
    ? terms.map((t) => el("span", { class: "chip term", title: t.note || "" }, `${t.src} → ${t.tgt}`))
    : [el("span", { class: "empty" }, "none found")]));
}

async function runSelect(ev) {
  ev && ev.preventDefault();
  const [src, tgt] = $("#direction").value.split("-");
  const btn = $("#select-btn");
  btn.disabled = true; btn.classList.add("spin");
  banner("");
  try {
    const res = await api("/api/select", { method: "POST", body: {
      text: $("#text").value, src, tgt, method: $("#method").value, k: Number($("#k").value), coverage: true,
      min_match: Number($("#min-match").value) || null, ...glossaryField() } });
    renderCoverage(res);
    renderGlossary(res.glossary);
    if (res.notice) banner(res.notice);
  } catch (e) {
    banner(e.message);
  } finally {
    btn.disabled = false; btn.classList.remove("spin");
  }
}

async function runLookup() {
  const [src, tgt] = $("#direction").value.split("-");
  const btn = $("#lookup-btn");
  btn.disabled = true; btn.classList.add("spin");
  banner("");
  try {
    const res = await api("/api/lookup", { method: "POST", body: {
      // empty field: the server's default minimum (70 %, the CAT tools' fuzzy-match threshold)
      text: $("#text").value, src, tgt, min_match: $("#min-match").value === "" ? undefined : Number($("#min-match").value),
      n: 5 } });
    $("#lookup-card").hidden = false;
    $("#lookup-meta").textContent = `${res.matches.length} at ${res.min_match}% or more · ${fmt(res.timings_ms.total, 1)} ms`;
    $("#lookup tbody").replaceChildren(...(res.matches.length ? res.matches.map((m) => el("tr", {},
      el("td", {}, el("span", { class: "badge match" }, `${m.match}%`)), el("td", {}, m.src), el("td", {}, m.tgt),
      el("td", { class: "meta", title: JSON.stringify(m.meta) }, m.corpus)))
      : [el("tr", {}, el("td", { colspan: 4, class: "meta" }, "no stored sentence matches this closely"))]));
  } catch (e) {
    banner(e.message);
  } finally {
    btn.disabled = false; btn.classList.remove("spin");
  }
}

async function runTranslate() {
  const [src, tgt] = $("#direction").value.split("-");
  const btn = $("#translate-btn");
  btn.disabled = true; btn.classList.add("spin");
  banner("");
  try {
    const res = await api("/api/translate", { method: "POST", body: {
      text: $("#text").value, src, tgt, method: $("#method").value, k: Number($("#k").value), model: $("#model").value,
      ...glossaryField() } });
    const box = $("#translation");
    box.hidden = false;
    // an exact match of the memory has no selection; a prompt fitted to the model's context
    // holds fewer examples than were selected
    const how = res.origin === "tm" ? "reused from the translation memory"
      : `${res.examples_used} examples${res.examples_dropped ? ` (${res.examples_dropped} dropped to fit the model's context)` : ""}`
        + ` · generated in ${fmt(res.generate_ms / 1000, 1)} s`;
    box.replaceChildren(el("strong", {}, res.output), el("span", { class: "meta" }, `${res.model} · ${how}`));
  } catch (e) {
    banner(e.message);
  } finally {
    btn.disabled = false; btn.classList.remove("spin");
  }
}

function renderCoverage(res) {
  const cov = res.coverage;
  $("#result").hidden = false;
  // legend
  $("#legend").replaceChildren(
    ...cov.picks.map((p, i) => el("span", { class: "key" }, el("span", { class: "dot", style: `background:${color(i)}` }), `#${i + 1}`)),
    el("span", { class: "key" }, el("span", { class: "dot none" }), "not covered"));
  // words
  $("#words").replaceChildren(...cov.words.map((w) => {
    if (!w.word) return el("span", { class: "w punct" }, w.text);
    if (w.covered_by === null) return el("span", { class: "w uncovered", title: w.in_pool ? "in the pool, not picked" : "not in the pool" }, w.text);
    return el("span", { class: "w covered", style: `background:${color(w.covered_by)}`, title: `covered by example #${w.covered_by + 1}` }, w.text);
  }));
  renderTree(cov.tree);
  // picks
  $("#picks-meta").textContent = `${res.method}, ${res.selected.length} of ${res.candidates.length} candidates`;
  $("#picks").replaceChildren(...cov.picks.map((p, i) => el("li", { class: "pick", style: `--pc:${color(i)}` },
    el("div", { class: "pick-head" }, el("span", { class: "pick-n" }, `#${i + 1}`), el("span", { class: "badge" }, p.criterion),
      p.value ? el("span", {}, `${p.value.kind.replace("_", " ")} ${fmt(p.value.value)}`) : null,
      res.selected[i] && res.selected[i].match !== null ? el("span", { class: "badge match", title: "match %: word-level edit-distance similarity to the sentence" }, `${res.selected[i].match}% match`) : null,
      el("span", {}, `pair ${p.pair_id}`)),
    el("p", { class: "pick-src" }, p.src), el("p", { class: "pick-tgt" }, p.tgt),
    el("div", { class: "chips" }, p.words.length ? p.words.map((w) => el("span", { class: "chip" }, w)) : el("span", { class: "empty" }, "no new word"),
      p.terms.length ? el("span", { class: "chip term", title: p.terms.join("\n") }, `${p.terms.length} exact terms`) : null))));
  // gaps of this sentence
  const chips = (node, items, cls) => node.replaceChildren(...(items.length ? items.map((t) => el("span", { class: "chip " + cls }, t)) : [el("span", { class: "empty" }, "none")]));
  chips($("#uncovered"), cov.uncovered_words, "bad");
  chips($("#pool-missing-words"), cov.missing_from_pool.words, "bad");
  chips($("#pool-missing-terms"), cov.missing_from_pool.terms, "term bad");
  // terms
  $("#terms tbody").replaceChildren(...cov.terms.map((t) => el("tr", {},
    el("td", { class: "term-key" }, t.key, t.mult > 1 ? ` ×${t.mult}` : ""),
    el("td", {}, t.covered_by === null ? el("span", { class: "chip bad" }, "none")
      : el("span", { class: "key" }, el("span", { class: "dot", style: `background:${color(t.covered_by)};display:inline-block` }), ` #${t.covered_by + 1}`)),
    el("td", {}, el("div", { class: "sim" }, el("div", { class: "bar" }, el("span", { style: `width:${t.similarity * 100}%;background:${t.covered_by === null ? "#d0d5dd" : color(t.covered_by)}` })), fmt(t.similarity, 2))))));
  // pool
  $("#pool-meta").textContent = `${cov.pool.length} candidates · certified ${res.certified === null ? "–" : res.certified ? "yes" : "no"} · ${fmt(res.timings_ms.total, 1)} ms`;
  const pickIndex = new Map(res.selected.map((p, i) => [p.pair_id, i]));
  const matchOf = new Map(res.candidates.map((c) => [c.pair_id, c.match]));
  $("#pool tbody").replaceChildren(...cov.pool.map((c) => el("tr", { class: c.picked ? "picked" : "" },
    el("td", {}, c.picked ? el("span", { class: "pick-n", style: `background:${color(pickIndex.get(c.pair_id))};color:#fff;border-radius:5px;padding:0 .4rem` }, c.rank) : c.rank),
    el("td", {}, fmt(c.score, 2)), el("td", {}, fmt(matchOf.get(c.pair_id), 1)), el("td", {}, c.src), el("td", { class: "meta" }, c.tgt))));
}

function renderTree(tree) {
  const box = $("#tree");
  box.innerHTML = tree.svg; // server-rendered by displaCy, word texts HTML-escaped there
  const svg = box.querySelector("svg");
  if (!svg) { box.textContent = "(empty sentence)"; return; }
  // displaCy sizes the drawing for its tallest possible arc: fit it to what is drawn.
  const bb = svg.getBBox();
  const tagRoom = 4; // the (empty: the parser alone runs) part-of-speech row
  svg.setAttribute("viewBox", `${bb.x - 8} ${bb.y - 8} ${bb.width + 16} ${bb.height + 16 + tagRoom}`);
  // Wider than the box: scale down to fit, but not below 65% (then the box scrolls).
  const w = bb.width + 16, h = bb.height + 16 + tagRoom;
  const scale = Math.max(0.65, Math.min(1, (box.clientWidth - 12) / w));
  svg.setAttribute("width", w * scale);
  svg.setAttribute("height", h * scale);
  svg.style.width = `${w * scale}px`;
  svg.style.height = `${h * scale}px`;
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "dependency tree");
  const words = svg.querySelectorAll(".displacy-token");
  tree.tokens.forEach((t, i) => {
    const w = words[i];
    if (!w) return;
    if (t.word_covered_by !== null) w.style.color = color(t.word_covered_by);
    else if (/[\p{L}\p{N}]/u.test(t.text)) { w.style.color = "#d92d20"; w.classList.add("uncov-word"); }
    w.querySelector(".displacy-tag")?.setAttribute("fill", "#98a2b3");
    const title = document.createElementNS("http://www.w3.org/2000/svg", "title");
    title.textContent = `${t.text}: term ${t.term}` + (t.term_covered_by === null ? " (not covered)" : ` covered by #${t.term_covered_by + 1} (${fmt(t.term_similarity, 2)})`);
    w.append(title);
  });
  const arrows = svg.querySelectorAll(".displacy-arrow");
  tree.arcs.forEach((tok, i) => {
    const a = arrows[i];
    const t = tree.tokens[tok];
    if (!a || !t) return;
    if (t.term_covered_by === null) { a.style.color = "#d0d5dd"; return; }
    a.style.color = color(t.term_covered_by);
    a.style.opacity = t.term_similarity >= 1 ? "1" : String(0.25 + 0.5 * t.term_similarity);
  });
}

// ------------------------------------------------------------------ jobs
function progressBar(j) {
  const total = Math.max(j.total, 1);
  const part = (n, c) => el("span", { style: `width:${(100 * n) / total}%;background:${c}` });
  return el("div", { class: "progress", title: `${j.done} done, ${j.failed} failed, ${j.running} running, ${j.queued} queued` },
    part(j.done, "#12b76a"), part(j.failed, "#f04438"), part(j.running, "#fdb022"));
}

async function loadJobs() {
  try {
    const jobs = await api("/api/jobs");
    $("#jobs-empty").hidden = jobs.length > 0;
    $("#jobs tbody").replaceChildren(...jobs.slice().reverse().map((j) => el("tr", {
      class: "clickable" + (j.job_id === state.jobId ? " selected" : ""), onclick: () => openJob(j.job_id, 0) },
      el("td", {}, j.name ? `${j.job_id} · ${j.name}` : String(j.job_id)), el("td", {}, `${j.src_lang}-${j.tgt_lang}`),
      el("td", {}, `${j.method}, k=${j.k}`), el("td", {}, j.model || "–"),
      el("td", {}, progressBar(j), el("span", { class: "meta" }, `${j.done + j.failed}/${j.total}`)),
      el("td", {}, el("span", { class: "badge " + j.state }, j.state)))));
  } catch (e) { banner(e.message); }
}

async function openJob(id, offset) {
  state.jobId = id; state.offset = offset;
  clearTimeout(state.timer);
  try {
    const res = await api(`/api/jobs/${id}?offset=${offset}&limit=${state.limit}`);
    const j = res.job;
    $("#job-detail").hidden = false;
    $("#job-title").textContent = `Job ${j.job_id}${j.name ? " · " + j.name : ""} (${j.src_lang}-${j.tgt_lang}, ${j.method}, k=${j.k})`;
    $("#job-state").textContent = j.state;
    $("#job-state").className = "badge " + j.state;
    $("#job-bar").style.width = `${(100 * (j.done + j.failed)) / Math.max(j.total, 1)}%`;
    $("#job-counts").textContent = `${j.done} done · ${j.failed} failed · ${j.running} running · ${j.queued} queued` +
      (j.avg_select_ms ? ` · select ${fmt(j.avg_select_ms, 1)} ms, generate ${fmt(j.avg_generate_ms, 0)} ms per item` : "");
    $("#items tbody").replaceChildren(...res.items.map((it) => el("tr", {},
      el("td", {}, it.index), el("td", {}, el("span", { class: "badge " + it.status }, it.status)),
      el("td", {}, it.source), el("td", { class: "out" }, it.output ?? (it.error ? el("span", { class: "chip bad" }, it.error) : "")))));
    $("#items-range").textContent = `items ${offset + 1}–${offset + res.items.length} of ${j.total}`;
    $("#items-prev").disabled = offset === 0;
    $("#items-next").disabled = offset + res.items.length >= j.total;
    if (j.state === "running" || j.state === "queued") {
      state.timer = setTimeout(() => { if (!$("#view-jobs").hidden) { openJob(id, state.offset); loadJobs(); } }, 2000);
    }
  } catch (e) { banner(e.message); }
}

async function submitJob(ev) {
  ev.preventDefault();
  const [src, tgt] = $("#job-direction").value.split("-");
  const sentences = $("#job-sentences").value.split("\n").map((s) => s.trim()).filter(Boolean);
  try {
    const res = await api("/api/jobs", { method: "POST", body: {
      sentences, src, tgt, model: $("#job-model").value, method: $("#job-method").value, name: $("#job-name").value || null } });
    $("#job-sentences").value = "";
    await loadJobs();
    openJob(res.job_id, 0);
  } catch (e) { banner(e.message); }
}

// ------------------------------------------------------------------ gaps
async function loadGapJobs() {
  try {
    const jobs = await api("/api/jobs");
    fillSelect($("#gaps-job"), jobs.map((j) => String(j.job_id)), String(state.jobId || (jobs.at(-1) || {}).job_id));
    [...$("#gaps-job").options].forEach((o) => {
      const j = jobs.find((x) => String(x.job_id) === o.value);
      o.textContent = `${j.job_id}${j.name ? " · " + j.name : ""} (${j.src_lang}-${j.tgt_lang}, ${j.total} items)`;
    });
  } catch (e) { banner(e.message); }
}

function gapSource() {
  const job = $("#gaps-source").value === "job";
  $("#gaps-job-box").hidden = !job;
  $("#gaps-dir-box").hidden = job;
  $("#gaps-text-box").hidden = job;
}

async function runGaps(ev) {
  ev.preventDefault();
  banner("");
  try {
    let res;
    if ($("#gaps-source").value === "job") {
      res = await api(`/api/gaps?job=${encodeURIComponent($("#gaps-job").value)}`);
    } else {
      const [src, tgt] = $("#gaps-direction").value.split("-");
      const sentences = $("#gaps-text").value.split("\n").map((s) => s.trim()).filter(Boolean);
      res = await api("/api/gaps", { method: "POST", body: { sentences, src, tgt } });
    }
    renderGaps(res);
  } catch (e) { banner(e.message); }
}

function renderGaps(res) {
  $("#gaps-result").hidden = false;
  const rows = (items, cls) => items.length ? items.map((g) => el("tr", {},
    el("td", { class: cls }, g.unit), el("td", {}, `${g.sentences}`),
    el("td", {}, g.in_memory ? el("span", { class: "badge missed", title: "some stored sentence has it; BM25 did not bring it into the pool" }, "pool missed")
      : el("span", { class: "badge lacks", title: "no stored sentence of this language has it" }, "memory lacks")),
    el("td", { class: "meta" }, el("span", { class: "clamp", title: g.example || "" }, g.example || ""))))
    : [el("tr", {}, el("td", { colspan: 4, class: "meta" }, "nothing missing"))];
  $("#gaps-words tbody").replaceChildren(...rows(res.words, ""));
  $("#gaps-terms tbody").replaceChildren(...rows(res.terms, "term-key"));
  $("#gaps-words-meta").textContent = `over ${res.selections} sentences`;
  $("#gaps-terms-meta").textContent = `over ${res.selections} sentences`;
}

// ------------------------------------------------------------------ start
async function start() {
  document.querySelectorAll(".tab").forEach((t) => t.addEventListener("click", () => show(t.dataset.view)));
  $("#token").value = sessionStorage.getItem("scoi-token") || "";
  $("#token").addEventListener("change", (e) => { sessionStorage.setItem("scoi-token", e.target.value); init(); });
  $("#select-form").addEventListener("submit", runSelect);
  $("#text").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) runSelect(e); });
  $("#job-form").addEventListener("submit", submitJob);
  $("#translate-btn").addEventListener("click", runTranslate);
  $("#lookup-btn").addEventListener("click", runLookup);
  $("#jobs-refresh").addEventListener("click", loadJobs);
  $("#items-prev").addEventListener("click", () => openJob(state.jobId, Math.max(0, state.offset - state.limit)));
  $("#items-next").addEventListener("click", () => openJob(state.jobId, state.offset + state.limit));
  $("#gaps-source").addEventListener("change", gapSource);
  $("#gaps-form").addEventListener("submit", runGaps);
  api("/api/health").then((h) => { $("#version").textContent = `scoi ${h.version} · database ${h.database}`; }).catch(() => {});
  await init();
}

async function init() {
  try {
    const cfg = state.config = await api("/api/config");
    $("#token-box").hidden = !cfg.token_required;
    const dir = cfg.directions.includes("fr-en") ? "fr-en" : cfg.directions[0];
    for (const s of ["#direction", "#job-direction", "#gaps-direction"]) fillSelect($(s), cfg.directions, dir);
    for (const s of ["#method", "#job-method"]) fillSelect($(s), cfg.methods.filter((m) => m !== "zero" || s === "#job-method"), "scoi");
    fillSelect($("#job-model"), cfg.models, cfg.models[0]);
    fillSelect($("#model"), cfg.models, cfg.models[0]);
    $("#translate-box").hidden = cfg.models.length === 0;
    fillSelect($("#glossary"), ["", ...(cfg.glossaries || [])], "");
    $("#glossary").options[0].textContent = "none";
    $("#glossary-box").hidden = !(cfg.glossaries || []).length;
    const noModel = cfg.models.length === 0;
    $("#job-form button[type=submit]").disabled = noModel;
    $("#job-model-hint").hidden = !noModel;
    $("#k").max = cfg.limits.max_k;
    document.body.dataset.ready = "1";
  } catch (e) { banner(e.message); }
}

start();

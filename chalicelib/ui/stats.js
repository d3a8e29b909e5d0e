// A workflow's figures (#/workflows/7, #/workflows/7?days=90): how long its
// approvals take, from GET /workflows/{id}/stats over the last days chosen.
// Per step, the wait as a plot drawn here in SVG (no chart library: four
// values a step, bars and a line), with its figures in words beside it for
// whoever does not see the plot; the runs' counts; the overdue runs as links.
import { query, request, statusOf, workflowById } from "./api.js";
import { el, view } from "./dom.js";
import { plural } from "./format.js";
import { draw, messageOf } from "./router.js";

/** @typedef {import("./types.js").Durations} Durations */
/** @typedef {import("./types.js").StepStats} StepStats */
/** @typedef {import("./types.js").WorkflowStats} WorkflowStats */

const SVG = "http://www.w3.org/2000/svg";
// The windows offered, in days back from now (the API takes up to 366).
const WINDOWS = [7, 30, 90, 365];
const DEFAULT_DAYS = 30;
// The plot's geometry, in SVG units (as wide as the view, so that a unit is a
// pixel and the names read alike at 360 px and at 1280): a row per step, its
// name above its bar.
const PLOT = { row: 40, label: 14, bar: 12, left: 4, right: 8, minWidth: 240, inset: 34 };
// What each part of a step's bar stands for, in the legend and in words.
const PARTS = [
  ["p50", "half the waits were shorter (median)"],
  ["p90", "9 in 10 were shorter"],
  ["p99", "99 in 100 were shorter"],
  ["max", "the longest"],
];
const RUN_COUNTS = [
  ["started", "started"],
  ["completed", "completed"],
  ["rejected", "rejected"],
  ["returned", "returned for changes"],
  ["cancelled", "cancelled"],
  ["in_progress", "in progress"],
  ["overdue", "overdue"],
];

/**
 * @param {number} current
 * @param {{ id: number, days: number | null }} target
 * @returns {Promise<HTMLElement | null>}
 */
export async function showWorkflowStats(current, target) {
  const days = target.days && WINDOWS.includes(target.days) ? target.days : DEFAULT_DAYS;
  const workflow = await workflowById(target.id);
  const to = new Date();
  const from = new Date(to.getTime() - days * 86400 * 1000);
  const title = `How long ${workflow.name} takes`;
  let figures;
  try {
    const span = query({ from: from.toISOString(), to: to.toISOString() });
    figures = /** @type {WorkflowStats} */ (await request("GET", `/workflows/${workflow.id}/stats${span}`));
  } catch (error) {
    if (statusOf(error) !== 403) throw error;
    return draw(current, title, el("p", { class: "panel" }, messageOf(error)));
  }
  return draw(
    current,
    title,
    windowLinks(workflow.id, days),
    runCounts(figures, days),
    stepWaits(figures),
    overdueRuns(figures),
  );
}

/**
 * The windows to choose from, as links; the one shown is the current page.
 * @param {number} id
 * @param {number} days
 * @returns {HTMLElement}
 */
function windowLinks(id, days) {
  return el(
    // Not a <nav>: the page has one navigation landmark, its header's.
    "div",
    { class: "windows", role: "group", "aria-label": "Runs started in" },
    el("ul", {}, WINDOWS.map((each) => el("li", {}, el("a", { href: `#/workflows/${id}?days=${each}`, "aria-current": each === days ? "page" : null }, `Last ${each} days`)))),
  );
}

/**
 * @param {WorkflowStats} figures
 * @param {number} days
 * @returns {HTMLElement}
 */
function runCounts(figures, days) {
  const runs = figures.runs;
  return el(
    "section",
    { class: "panel", "aria-labelledby": "runs-heading" },
    el("h2", { id: "runs-heading" }, `Runs started in the last ${days} days`),
    el("dl", { class: "facts counts" }, RUN_COUNTS.map(([key, label]) => el("div", {}, el("dt", {}, label), el("dd", {}, String(runs[/** @type {keyof WorkflowStats["runs"]} */ (key)]))))),
    el("p", {}, "Whole runs, start to end: ", figuresText(figures.run_seconds, "ended run", "ended runs")),
    figures.truncated ? el("p", { class: "warning" }, "These figures cover the earliest runs only: the window holds more than one answer reads. Choose a shorter window.") : null,
  );
}

/**
 * Each step: its decisions and, plotted, how long runs waited at it.
 * @param {WorkflowStats} figures
 * @returns {HTMLElement}
 */
function stepWaits(figures) {
  const longest = Math.max(0, ...figures.steps.map((step) => step.wait_seconds.max || 0));
  return el(
    "section",
    { class: "panel", "aria-labelledby": "waits-heading" },
    el("h2", { id: "waits-heading" }, "Waits at each step"),
    el("p", { class: "hint" }, "From a run's arrival at the step to the decision that moved it on. Percentiles are exact, by nearest rank."),
    legend(),
    waitPlot(figures.steps, longest),
    el(
      "ol",
      { class: "step-figures" },
      figures.steps.map((step) =>
        el(
          "li",
          {},
          el("span", { class: "step-name" }, step.name),
          ": ",
          figuresText(step.wait_seconds, "wait", "waits"),
          ` ${plural(step.approvals, "approval", "approvals")}, ${plural(step.rejections, "rejection", "rejections")}, ${plural(step.returns, "return", "returns")}, ${plural(step.skips, "skip", "skips")}.`,
        ),
      ),
    ),
  );
}

/** @returns {HTMLElement} */
function legend() {
  return el(
    "ul",
    { class: "legend", "aria-hidden": "true" },
    PARTS.map(([part, meaning]) => el("li", {}, el("span", { class: `swatch part-${part}` }), `${part}: ${meaning}`)),
  );
}

/**
 * The plot: a row per step, a bar to its p50, a lighter one on to its p90, a
 * line on to its p99 and a mark at its max, on one scale for all steps.
 * @param {StepStats[]} steps
 * @param {number} longest
 * @returns {SVGSVGElement}
 */
function waitPlot(steps, longest) {
  const height = Math.max(1, steps.length) * PLOT.row;
  // The view's width less the panel's padding and border.
  const width = Math.max(PLOT.minWidth, Math.round(view.clientWidth) - PLOT.inset);
  const plot = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "wait-plot", role: "img", "aria-label": plotLabel(steps) });
  const scale = (/** @type {number} */ seconds) => PLOT.left + (longest ? (seconds / longest) * (width - PLOT.left - PLOT.right) : 0);
  steps.forEach((step, index) => {
    const top = index * PLOT.row + PLOT.label + 4;
    const middle = top + PLOT.bar / 2;
    const row = svg("g", { class: "wait-row", "data-step": step.name });
    const name = svg("text", { x: PLOT.left, y: index * PLOT.row + PLOT.label, class: "wait-label" });
    name.textContent = step.name;
    row.append(name);
    const waits = step.wait_seconds;
    if (waits.count && waits.p50 !== null && waits.p90 !== null && waits.p99 !== null && waits.max !== null) {
      row.append(
        svg("rect", { class: "part-p50", x: PLOT.left, y: top, width: scale(waits.p50) - PLOT.left, height: PLOT.bar }),
        svg("rect", { class: "part-p90", x: scale(waits.p50), y: top, width: scale(waits.p90) - scale(waits.p50), height: PLOT.bar }),
        svg("line", { class: "part-p99", x1: scale(waits.p90), x2: scale(waits.p99), y1: middle, y2: middle }),
        svg("line", { class: "part-max", x1: scale(waits.max), x2: scale(waits.max), y1: top, y2: top + PLOT.bar }),
      );
    } else {
      row.append(svg("line", { class: "no-wait", x1: PLOT.left, x2: width - PLOT.right, y1: middle, y2: middle }));
    }
    plot.append(row);
  });
  return plot;
}

/**
 * @param {StepStats[]} steps
 * @returns {string}
 */
function plotLabel(steps) {
  return `Waits at each step: ${steps.map((step) => `${step.name}, ${figuresText(step.wait_seconds, "wait", "waits")}`).join(" ")}`;
}

/**
 * An element of the SVG namespace with attributes.
 * @template {keyof SVGElementTagNameMap} K
 * @param {K} tag
 * @param {{ [name: string]: string | number | null }} attributes
 * @returns {SVGElementTagNameMap[K]}
 */
function svg(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) if (value !== null) node.setAttribute(name, String(value));
  return node;
}

/**
 * @param {WorkflowStats} figures
 * @returns {HTMLElement}
 */
function overdueRuns(figures) {
  const ids = figures.overdue_runs;
  return el(
    "section",
    { class: "panel", "aria-labelledby": "overdue-heading" },
    el("h2", { id: "overdue-heading" }, "Overdue runs"),
    ids.length
      ? el("ul", { class: "overdue" }, ids.map((id) => el("li", {}, el("a", { href: `#/runs/${id}` }, `Run ${id}`))))
      : el("p", { class: "empty" }, "No run of this window waits past its step's deadline."),
  );
}

/**
 * "3 waits: median 2 hours, p90 5 hours, p99 5 hours, longest 5 hours."
 * @param {Durations} durations
 * @param {string} one
 * @param {string} many
 * @returns {string}
 */
export function figuresText(durations, one, many) {
  if (!durations.count || durations.p50 === null) return `no ${many}.`;
  const parts = [`median ${spoken(durations.p50)}`, `p90 ${spoken(durations.p90)}`, `p99 ${spoken(durations.p99)}`, `longest ${spoken(durations.max)}`];
  return `${plural(durations.count, one, many)}: ${parts.join(", ")}.`;
}

/**
 * A number of seconds in the unit that reads best: "45 seconds", "12 minutes",
 * "5.5 hours", "3 days".
 * @param {number | null} seconds
 * @returns {string}
 */
export function spoken(seconds) {
  if (seconds === null) return "none";
  /** @type {Array<[string, number]>} */
  const units = [["day", 86400], ["hour", 3600], ["minute", 60]];
  const [name, size] = units.find(([, each]) => seconds >= 2 * each) || ["second", 1];
  const count = Math.round((seconds / size) * 10) / 10;
  return `${count} ${name}${count === 1 ? "" : "s"}`;
}

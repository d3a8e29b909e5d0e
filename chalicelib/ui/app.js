// The approvers' page: views over the JSON API of the app that serves it, as
// ES modules that the browser loads as they are (no bundler): index.html loads
// this one, which imports the others by relative paths, so that they resolve
// under API Gateway's stage as locally. One module per view:
//
//   inbox.js        #/inbox: the runs waiting for the caller
//   run.js          #/runs/42: a run, what the caller may do with it and why not
//                   (its forms: decide.js; its steps and history: timeline.js)
//   workflows.js    #/workflows: the workflows, start a run, define a workflow, append a step
//   stats.js        #/workflows/7: how long the workflow's approvals take
//   delegations.js  #/delegations: rights to decide lent and lent to me
//   signin.js       #/me: who am I (sign in and out: session.js)
//
// and the parts they share: router.js (the hash routes), api.js (the API
// client and its errors), contract.js (what the page reads from
// /openapi.json: its fields' limits), caller.js (who this tab acts as),
// dom.js (el, messages), format.js (times, names, lists in words),
// steps.js, input.js and inputform.js (a run's input), conditions.js (a
// step's condition), types.js (the API's records, for the type checker).
//
// What the API sends reaches the DOM only as text, in elements made here
// (textContent, createElement): never as markup.
import { SIGNIN } from "./caller.js";
import { showDelegations } from "./delegations.js";
import { showInbox } from "./inbox.js";
import { start } from "./router.js";
import { showRun } from "./run.js";
import { loadSession } from "./session.js";
import { showMe } from "./signin.js";
import { showWorkflowStats } from "./stats.js";
import { showWorkflows } from "./workflows.js";

const views = {
  inbox: showInbox,
  run: showRun,
  workflows: showWorkflows,
  workflow: showWorkflowStats,
  delegations: showDelegations,
  me: showMe,
};
// Signed in through the service: who, it says first (the session cookie is not the page's to read).
if (SIGNIN) loadSession().then(() => start(views));
else start(views);

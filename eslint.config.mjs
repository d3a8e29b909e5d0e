// ESLint for the approvers' page (chalicelib/ui/*.js), run by `make lint`:
// the recommended rules, and what keeps the page's code plain and its data text.
import js from "@eslint/js";
import globals from "globals";

export default [
  {
    files: ["chalicelib/ui/**/*.js"],
    ...js.configs.recommended,
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: globals.browser,
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      ...js.configs.recommended.rules,
      "no-unused-vars": ["error", { args: "all", caughtErrors: "all", argsIgnorePattern: "^_" }],
      eqeqeq: ["error", "always"],
      "no-implicit-globals": "error",
      "prefer-const": "error",
      "no-var": "error",
      "no-shadow": "error",
      "no-use-before-define": ["error", { functions: false, classes: true, variables: true }],
      "no-console": "error",
      "no-eval": "error",
      "no-implied-eval": "error",
      "no-new-func": "error",
      "no-throw-literal": "error",
      "no-return-assign": ["error", "except-parens"],
      "object-shorthand": "error",
      // Data reaches the DOM as text only (tests/unit/test_page_assets.py says so too).
      "no-restricted-properties": [
        "error",
        { property: "innerHTML", message: "Text only: use textContent or el()." },
        { property: "outerHTML", message: "Text only: use textContent or el()." },
        { property: "insertAdjacentHTML", message: "Text only: use el()." },
        { object: "document", property: "write", message: "Text only: use el()." },
      ],
    },
  },
];

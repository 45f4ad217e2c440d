#!/bin/sh
# Stand-in for QMD (github.com/tobi/qmd, npm @tobilu/qmd 2.8.3) in tests:
# prints what `qmd search --json` prints (see formatter in dist/cli/qmd.js:
# docid, score, file, line, title, context, snippet with its "@@" header).
# With QMD_ARGS_FILE set it writes its arguments there, one per line.
if [ -n "$QMD_ARGS_FILE" ]; then printf '%s\n' "$@" > "$QMD_ARGS_FILE"; fi
case "$1" in
search)
  for last; do :; done
  case "$last" in
  fail) echo "qmd: SQLITE_BUSY: index is locked" >&2; exit 3 ;;
  nothing) echo "[]"; exit 0 ;;
  esac
  cat <<'JSON'
[
  {
    "docid": "#a1b2c3",
    "score": 0.87,
    "file": "qmd://notes/lisbon.md",
    "line": 12,
    "title": "Moving to Lisbon",
    "context": "Personal notes",
    "snippet": "@@ -12,2 @@ (11 before, 20 after)\nAna moves to Lisbon in May.\nShe found a flat in Alfama."
  },
  {
    "docid": "#d4e5f6",
    "score": 0.41,
    "file": "qmd://notes/bikes.md",
    "title": "Bikes",
    "snippet": "@@ -3,1 @@ (2 before, 0 after)\nBen repairs his bicycle on Sundays.",
    "somethingNew": {"ignored": true}
  },
  {
    "score": 0.1,
    "title": "a result without a file is skipped"
  }
]
JSON
  ;;
get) printf 'line one\nline two\n' ;;
update) echo "Updated 2 collections" ;;
*) echo "qmd stand-in: unknown command $1" >&2; exit 1 ;;
esac

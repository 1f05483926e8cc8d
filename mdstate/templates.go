package mdstate

// Templates are the files `ralph init` creates. Each explains itself in a
// comment that GitHub does not render and ralph does not parse.
var Templates = map[string]string{
	AgentFile: `# Working in this project

<!--
What ralph has learned about working here: how to build and test, what to
avoid, conventions to keep. Every agent ralph starts reads this file first.
Edit it freely. Every top-level bullet counts as a learning; ralph adds its
own under "Learnings", one bullet each.
-->

## Learnings
`,
	GoalsFile: `# Goals

<!--
What this project is working towards, one checkbox each, for example:
  - [ ] Ship a first release
ralph numbers goals G1, G2, … and gives them to every agent it starts.
Tick a goal when it is met: [x].
-->
`,
	TasksFile: `# Tasks

<!--
ralph works through these tasks from top to bottom. Add one by writing
  - [ ] Write the docs
and ralph numbers it (T1, T2, …) the next time it writes this file.
Checkboxes: [ ] pending, [/] in progress, [x] done, [!] blocked, [-] skipped.
Optional lines under a task:
  - priority: 1      1 runs first; tasks without one follow, in file order
  - after: T1, T2    wait until these tasks are done
  - note: text       anything worth knowing; ralph adds its own notes here
-->
`,
	ProgressFile: `# Progress

<!--
What was done, when, by whom, with what result; newest last. ralph adds an
entry after every task, headed "## <time> — <what>". You may add your own.
-->
`,
	TodoFile: `# To-do

<!--
Things to do later and next steps, one checkbox each, for example:
  - [ ] Check the error messages
ralph adds the to-dos its agents report. ` + "`ralph todo promote D3`" + ` turns one
into a task.
-->
`,
}

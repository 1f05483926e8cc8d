package coordinator

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ralph-dev/ralph/coordinator/proc"
	"github.com/ralph-dev/ralph/gitctx"
	"github.com/ralph-dev/ralph/mdstate"
	"github.com/ralph-dev/ralph/projectdetect"
)

// recentEntries is how many of the last progress entries a report reads
// unless told otherwise: the prompt shows them.
const recentEntries = 20

// ReportOptions bounds what the recovery report reads.
type ReportOptions struct {
	StatusTimeout time.Duration // git status deadline; 0: gitctx.DefaultStatusTimeout
	DetectBudget  time.Duration // project scan budget; 0: projectdetect.DefaultBudget
	Commits       int           // recent commits to list; 0: 10
	Progress      int           // recent progress entries to parse; 0: recentEntries
	// Git locates the user's git configuration, for the project scan's
	// global excludes file.
	Git projectdetect.GitConfig
	// NoDetect skips the project scan (ralph status does not need it all).
	NoDetect bool
	// NoStatus skips the work tree status.
	NoStatus bool
	// StatusCache, when set, lets the work tree status come from a result
	// git gave before, while nothing git status reads has changed
	// (gitctx.CachedCLIStatus).
	StatusCache *gitctx.StatusCache
	// History, when set, keeps the git facts between reports (with
	// NoStatus: the prompt's, every iteration) and reuses them while the
	// repository's refs are unchanged.
	History *HistoryCache
	// NoHistory skips the commits (recent ones, the state files' last, and
	// those since the session's baseline): ralph status shows none.
	NoHistory bool
	// Project, when set, reads the state through this Project (and its
	// parse cache) instead of a new one: the coordinator's own.
	Project *mdstate.Project
	// Scanned, when set, is used instead of scanning the project again.
	Scanned *projectdetect.Project
	// Holder, when set, is the coordinator lock's holder, the caller
	// itself (a coordinator's prompt): the report does not look for it.
	Holder *LockInfo
}

func (o ReportOptions) withDefaults() ReportOptions {
	if o.Commits == 0 {
		o.Commits = 10
	}
	if o.Progress == 0 {
		o.Progress = recentEntries
	}
	return o
}

// Report is what ralph reconstructs on start from the state files and git
// alone: `ralph context` prints it, and the coordinator resumes from it.
type Report struct {
	Root    string
	State   *mdstate.State
	Project *projectdetect.Project // nil when the scan failed; see Problems
	Git     *GitInfo               // nil without a usable repository; see Problems
	// Session is the last session recorded in RALPH_TASKS.md, nil if none.
	// Its Status is "interrupted" when it says running but no coordinator
	// holds the project's lock: ralph crashed or was killed.
	Session *mdstate.Session
	// RecordedStatus is what the file says, before that correction.
	RecordedStatus string
	// Holder is the coordinator holding the lock now, if any.
	Holder *LockInfo
	// Problems are things ralph carries on without: no git, a corrupt
	// repository, a status that timed out.
	Problems []string
	// GitErr is why Git is nil: wraps gitctx.ErrNotRepo, ErrBare or
	// ErrCorrupt.
	GitErr error
}

// Interrupted reports whether the last session was cut short.
func (r *Report) Interrupted() bool {
	return r.Session != nil && r.Session.Status == mdstate.SessionInterrupted
}

// GitInfo is the git half of the report.
type GitInfo struct {
	Branch        string
	Head          string
	Detached      bool
	Unborn        bool
	Ahead, Behind int
	UpstreamKnown bool
	Status        gitctx.Status
	Recent        []gitctx.Commit
	// StateCommits are the last commits that changed a state file.
	StateCommits []gitctx.Commit
	// SinceBaseline is what happened since the session's baseline commit.
	SinceBaseline *Since
}

// Dirty reports uncommitted changes; false when status is unavailable.
func (g *GitInfo) Dirty() bool { return g.Status.Available && !g.Status.Clean() }

// Since summarises the commits after a baseline.
type Since struct {
	Baseline string
	Commits  []gitctx.Commit
	Stat     gitctx.DiffStat
}

// NoGitProblem is the line in Report.Problems for a project outside git:
// worth saying in ralph context, not in every ralph status.
const NoGitProblem = "not a git repository: ralph works without git context"

// StatePaths are the state files as git paths relative to the root.
var StatePaths = mdstate.Files

// BuildReport reads everything ralph knows about the project at root. The
// state files, the project scan and git run at the same time, each within
// its own bound, so the report costs about as much as the slowest of them;
// a part that fails is left out with a line in Problems, never fatal. Only
// a state file ralph cannot read is an error.
func BuildReport(ctx context.Context, root string, opts ReportOptions) (*Report, error) {
	opts = opts.withDefaults()
	r := &Report{Root: root}
	// git status is the critical path (starting any program costs a
	// millisecond or more): it starts before anything else.
	cli := startStatus(ctx, root, opts)
	var wg sync.WaitGroup
	var mu sync.Mutex
	problem := func(s string) {
		mu.Lock()
		r.Problems = append(r.Problems, s)
		mu.Unlock()
	}
	r.Project = opts.Scanned
	if !opts.NoDetect && opts.Scanned == nil {
		wg.Go(func() {
			p, err := projectdetect.Detect(ctx, root, projectdetect.Options{Budget: opts.DetectBudget, Git: opts.Git})
			if err != nil {
				problem("project scan failed: " + err.Error())
				return
			}
			r.Project = p
		})
	}
	var repo *gitctx.Repo
	refs, kept := opts.History.lookup(root, opts.NoStatus)
	if kept != nil {
		r.Git = kept
	} else {
		wg.Go(func() {
			readReportGit(ctx, root, opts, cli, r, &repo, problem)
		})
	}
	// The state files are read here, beside the others: a goroutine of
	// their own, waited for, costs a thread woken on another CPU.
	p := opts.Project
	if p == nil {
		p = mdstate.Open(root)
	}
	state, stateErr := p.Load(opts.Progress)
	wg.Wait()
	if stateErr != nil {
		if repo != nil {
			repo.Close()
		}
		return nil, stateErr
	}
	r.State = state
	r.readSession(root, opts.Holder)
	stale := kept == nil
	if kept != nil && !opts.History.since(r.Session) {
		// A new baseline: the commits since it are read anew.
		repo, _ = gitctx.Open(root, proc.Runner{})
		stale = true
	}
	if repo != nil {
		r.readSince(ctx, repo, opts, problem)
		repo.Close()
	}
	if stale {
		opts.History.keep(refs, r.Git)
	}
	return r, nil
}

// readReportGit reads r's git facts, leaving the repository open in repo
// for what the session's baseline asks.
func readReportGit(ctx context.Context, root string, opts ReportOptions, cli chan cliResult, r *Report, repo **gitctx.Repo, problem func(string)) {
	g, rp, err := readGit(ctx, root, opts, cli)
	if err != nil {
		r.GitErr = err
		switch {
		case errors.Is(err, gitctx.ErrNotRepo):
			problem(NoGitProblem)
		default:
			problem(err.Error())
		}
		return
	}
	r.Git, *repo = g, rp
}

// readSession reads the session RALPH_TASKS.md records, and whether a
// coordinator holds the project now.
func (r *Report) readSession(root string, known *LockInfo) {
	if r.State.Tasks == nil {
		return
	}
	s, warns := r.State.Tasks.Session()
	r.State.Warnings = append(r.State.Warnings, warns...)
	if s == nil {
		return
	}
	r.Session = s
	r.RecordedStatus = string(s.Status)
	holder, held := LockInfo{}, false
	if known != nil {
		holder, held = *known, true
	} else {
		holder, held = LockHolder(root)
	}
	if held {
		r.Holder = &holder
	}
	if s.Status == mdstate.SessionRunning && !held {
		s.Status = mdstate.SessionInterrupted
	}
}

// readSince reads the commits since the session's baseline.
func (r *Report) readSince(ctx context.Context, repo *gitctx.Repo, opts ReportOptions, problem func(string)) {
	if r.Session == nil || r.Session.Baseline == "" || r.Git == nil || r.Git.Unborn || opts.NoHistory {
		return
	}
	commits, stat, err := repo.CommitsSince(ctx, r.Session.Baseline)
	if err != nil {
		problem("commits since the session's baseline " + short(r.Session.Baseline) + ": " + err.Error())
		return
	}
	r.Git.SinceBaseline = &Since{Baseline: r.Session.Baseline, Commits: commits, Stat: stat}
}

// HistoryCache keeps one report's git facts (branch, HEAD, upstream,
// commits) for the next report of the same session: they change only
// when a ref does, which gitctx.RefsKey checks with a few stats, where
// reading them opens the repository and walks history (about 1 ms an
// iteration on a small repository, more on a big one). The zero value is
// empty; a nil *HistoryCache keeps nothing.
type HistoryCache struct {
	mu   sync.Mutex
	refs string  // gitctx.RefsKey when git was read
	git  GitInfo // what was read; its Status is not kept
}

// lookup returns the kept facts while refs are unchanged, and the refs'
// key now. Only a report without the work tree status uses them.
func (h *HistoryCache) lookup(root string, noStatus bool) (string, *GitInfo) {
	if h == nil || !noStatus {
		return "", nil
	}
	refs, ok := gitctx.RefsKey(root)
	if !ok {
		return "", nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs != refs {
		return refs, nil
	}
	g := h.git
	return refs, &g
}

// since reports whether the kept facts hold the commits since s's
// baseline (or s asks for none).
func (h *HistoryCache) since(s *mdstate.Session) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s == nil || s.Baseline == "" {
		return true
	}
	return h.git.SinceBaseline != nil && h.git.SinceBaseline.Baseline == s.Baseline
}

// keep stores g, read when the refs' key was refs.
func (h *HistoryCache) keep(refs string, g *GitInfo) {
	if h == nil || refs == "" || g == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refs, h.git = refs, *g
	h.git.Status = gitctx.Status{}
}

// cliResult is a git status run by the CLI, possibly still to complete
// with go-git's.
type cliResult struct {
	st  gitctx.Status
	err error
}

// startStatus starts the git CLI's status, unless opts say none; its
// result comes on the channel (nil for none). Without a cache, git starts
// before startStatus returns: a goroutine would start it only once the
// work that follows left it a thread, milliseconds late where that work
// is busy (context on 20,000 files, issue 14). Through a cache, what
// comes first (reading the cache, a snapshot of the work tree) is left to
// a goroutine, since it often ends with no git to start.
func startStatus(ctx context.Context, root string, opts ReportOptions) chan cliResult {
	if opts.NoStatus {
		return nil
	}
	cli := make(chan cliResult, 1)
	if opts.StatusCache == nil {
		wait := gitctx.StartCLIStatus(ctx, proc.Runner{}, root, opts.StatusTimeout)
		go func() {
			var res cliResult
			res.st, res.err = wait()
			cli <- res
		}()
		return cli
	}
	go func() {
		var res cliResult
		res.st, res.err = gitctx.CachedCLIStatus(ctx, proc.Runner{}, root, *opts.StatusCache, opts.StatusTimeout)
		cli <- res
	}()
	return cli
}

func readGit(ctx context.Context, root string, opts ReportOptions, cli chan cliResult) (*GitInfo, *gitctx.Repo, error) {
	repo, err := gitctx.Open(root, proc.Runner{})
	if err == nil {
		var head gitctx.Head
		if head, err = repo.Head(); err == nil {
			return readHistory(ctx, root, opts, repo, head, cli)
		}
		repo.Close()
	}
	if cli != nil {
		<-cli // bounded by the status timeout; leave no git behind
	}
	return nil, nil, err
}

func readHistory(ctx context.Context, root string, opts ReportOptions, repo *gitctx.Repo, head gitctx.Head, cli chan cliResult) (*GitInfo, *gitctx.Repo, error) {
	g := &GitInfo{Branch: head.Branch, Head: head.Hash, Detached: head.Detached, Unborn: head.Unborn}
	// The project may be a folder inside the work tree (a monorepo): git
	// paths are relative to the work tree root.
	paths := StatePaths
	if rel, err := filepath.Rel(repo.Root(), root); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		paths = make([]string, len(StatePaths))
		for i, name := range StatePaths {
			paths[i] = filepath.ToSlash(rel) + "/" + name
		}
	}
	if !head.Unborn {
		g.Ahead, g.Behind, g.UpstreamKnown = repo.AheadBehind(ctx)
	}
	if !head.Unborn && !opts.NoHistory {
		g.Recent, _ = repo.Log(ctx, opts.Commits)
		g.StateCommits, _ = repo.StateCommits(ctx, paths, 5)
	}
	if cli != nil {
		res := <-cli
		g.Status = repo.StatusAfter(ctx, opts.StatusTimeout, res.st, res.err)
	}
	return g, repo, nil
}

func short(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}

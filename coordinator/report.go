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

// ReportOptions bounds what the recovery report reads.
type ReportOptions struct {
	StatusTimeout time.Duration // git status deadline; 0: gitctx.DefaultStatusTimeout
	DetectBudget  time.Duration // project scan budget; 0: projectdetect.DefaultBudget
	Commits       int           // recent commits to list; 0: 10
	Progress      int           // recent progress entries to parse; 0: 20
	// Git locates the user's git configuration, for the project scan's
	// global excludes file.
	Git projectdetect.GitConfig
	// NoDetect skips the project scan (ralph status does not need it all).
	NoDetect bool
	// NoStatus skips the work tree status.
	NoStatus bool
	// Project, when set, reads the state through this Project (and its
	// parse cache) instead of a new one: the coordinator's own.
	Project *mdstate.Project
	// Scanned, when set, is used instead of scanning the project again.
	Scanned *projectdetect.Project
}

func (o ReportOptions) withDefaults() ReportOptions {
	if o.Commits == 0 {
		o.Commits = 10
	}
	if o.Progress == 0 {
		o.Progress = 20
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
	var wg sync.WaitGroup
	var stateErr error
	var mu sync.Mutex
	problem := func(s string) {
		mu.Lock()
		r.Problems = append(r.Problems, s)
		mu.Unlock()
	}
	wg.Go(func() {
		p := opts.Project
		if p == nil {
			p = mdstate.Open(root)
		}
		r.State, stateErr = p.Load(opts.Progress)
	})
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
	wg.Go(func() {
		g, rp, err := readGit(ctx, root, opts)
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
		r.Git, repo = g, rp
	})
	wg.Wait()
	if stateErr != nil {
		if repo != nil {
			repo.Close()
		}
		return nil, stateErr
	}
	if r.State.Tasks != nil {
		s, warns := r.State.Tasks.Session()
		r.State.Warnings = append(r.State.Warnings, warns...)
		if s != nil {
			r.Session = s
			r.RecordedStatus = string(s.Status)
			holder, held := LockHolder(root)
			if held {
				r.Holder = &holder
			}
			if s.Status == mdstate.SessionRunning && !held {
				s.Status = mdstate.SessionInterrupted
			}
		}
	}
	if repo != nil {
		if r.Session != nil && r.Session.Baseline != "" && !r.Git.Unborn {
			commits, stat, err := repo.CommitsSince(ctx, r.Session.Baseline)
			if err != nil {
				problem("commits since the session's baseline " + short(r.Session.Baseline) + ": " + err.Error())
			} else {
				r.Git.SinceBaseline = &Since{Baseline: r.Session.Baseline, Commits: commits, Stat: stat}
			}
		}
		repo.Close()
	}
	return r, nil
}

// cliResult is a git status run by the CLI, possibly still to complete
// with go-git's.
type cliResult struct {
	st  gitctx.Status
	err error
}

func readGit(ctx context.Context, root string, opts ReportOptions) (*GitInfo, *gitctx.Repo, error) {
	// git status is the slowest part on a large tree: start it before
	// go-git opens the repository (tens of milliseconds there), not after.
	var cli chan cliResult
	if !opts.NoStatus {
		cli = make(chan cliResult, 1)
		go func() {
			st, err := gitctx.CLIStatus(ctx, proc.Runner{}, root, opts.StatusTimeout)
			cli <- cliResult{st, err}
		}()
	}
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

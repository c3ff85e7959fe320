package pt2pt

// SetGosched replaces the scheduler pass of passScheduler until the
// returned function restores it.
func SetGosched(f func()) (restore func()) {
	old := gosched
	gosched = f
	return func() { gosched = old }
}

// SetSchedulerInterval replaces schedulerInterval until the returned
// function restores it.
func SetSchedulerInterval(d int64) (restore func()) {
	old := schedulerInterval
	schedulerInterval = d
	return func() { schedulerInterval = old }
}

// SchedulerCheckEvery is schedulerCheckEvery, for tests.
const SchedulerCheckEvery = schedulerCheckEvery

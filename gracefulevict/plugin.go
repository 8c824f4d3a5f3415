package gracefulevict

// Plugin decides whether a task's old copy may be removed before its grace
// period ends. The Assessor asks its plugins only about tasks the earlier
// rules left open; a task is done as soon as any plugin passes.
type Plugin interface {
	// Name identifies the plugin, e.g. in a controller's --evict-plugins flag.
	Name() string
	// CanCleanup reports whether the old copy of t may be removed now. It
	// must not modify t or b.
	CanCleanup(t Task, b Binding) bool
}

// ResourceHealthPluginName is the name of the plugin ResourceHealthPlugin
// returns.
const ResourceHealthPluginName = "ResourceHealth"

// ResourceHealthPlugin returns the built-in "ResourceHealth" plugin: it passes
// when the workload runs healthily where the scheduler put it, which means the
// schedule result is non-empty, the binding is scheduled (the scheduler has
// seen its latest generation) and every cluster of the result reports Healthy.
// An empty result never passes: removing the old copy then would leave the
// workload running nowhere.
func ResourceHealthPlugin() Plugin { return resourceHealth{} }

type resourceHealth struct{}

func (resourceHealth) Name() string { return ResourceHealthPluginName }

func (resourceHealth) CanCleanup(_ Task, b Binding) bool {
	if len(b.Clusters) == 0 || !b.Scheduled() {
		return false
	}
	for i := range b.Clusters {
		if b.Health[b.Clusters[i].Name] != Healthy {
			return false
		}
	}
	return true
}

package controllers

import "sigs.k8s.io/controller-runtime/pkg/manager"

// Setup builds the three controllers from their options and adds them to
// mgr, for a program that runs them together in a manager of its own (the
// fork's examples/karmadafork, the end-to-end suite): the
// ClusterTaintPolicyController, the EvictionController and the
// GracefulEvictionController. They share nothing: the EvictionController
// sees a task the GracefulEvictionController ends in its own reconcile of
// the binding, as it sees one any other writer ends. Every option is
// checked before mgr is touched. It returns the EvictionController, whose
// Limiter, Queue and Ledger a program may read.
//
// karmada-controller-manager starts each controller on its own, from its
// controller table, which may switch any of them off (package
// controllermanager's init functions).
func Setup(mgr manager.Manager, taints ClusterTaintPolicyOptions, eviction EvictionOptions, graceful GracefulEvictionOptions) (*EvictionController, error) {
	t, e, g, err := newControllers(taints, eviction, graceful)
	if err != nil {
		return nil, err
	}
	for _, c := range []interface{ SetupWithManager(manager.Manager) error }{t, e, g} {
		if err := c.SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// newControllers builds the controllers Setup adds.
func newControllers(taints ClusterTaintPolicyOptions, eviction EvictionOptions, graceful GracefulEvictionOptions) (*ClusterTaintPolicyController, *EvictionController, *GracefulEvictionController, error) {
	t, err := NewClusterTaintPolicyController(taints)
	if err != nil {
		return nil, nil, nil, err
	}
	e, err := NewEvictionController(eviction)
	if err != nil {
		return nil, nil, nil, err
	}
	g, err := NewGracefulEvictionController(graceful)
	if err != nil {
		return nil, nil, nil, err
	}
	return t, e, g, nil
}

// Package controllerruntime shows the library inside a controller-runtime
// manager: its tests and examples are the documentation. It is a module of
// its own so that the library's own modules never require controller-runtime;
// a user who already runs a manager has it.
//
//   - Example_pacedReconciler: a Reconciler that calls Limiter.Wait before
//     each eviction, so every worker of every controller sharing the Limiter
//     gets the one rate, and a pause holds them all.
//   - Example_queueAsRunnable: an eviction queue added to a manager as a
//     Runnable.
//   - TestInformerSourceControllerRuntime: a manager's cache.Informer feeds
//     ratelimit.NewInformerSource as a client-go informer does.
package controllerruntime

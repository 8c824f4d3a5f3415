package ratelimit

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Informer is the one method of an informer that NewInformerSource uses:
// client-go's cache.SharedIndexInformer and controller-runtime's
// cache.Informer both satisfy it.
type Informer interface {
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
}

// NewInformerSource returns a Tracker kept in step with inf: every object the
// informer adds or updates is Set under its cache key with faulty(obj)
// (which typically calls failover.IsFaulty; it runs on the informer's
// goroutine, so must be quick), and every deleted object is removed,
// tombstones included.
//
// Until the informer has delivered its initial list to this handler (the
// registration's HasSynced, not the store's), Health returns ErrNotSynced,
// which pauses a Limiter: a half-listed fleet says nothing. A Limiter polls
// a failing source, so it resumes within its poll interval of the sync. The
// handler stays registered for the informer's lifetime. An object that
// cannot be keyed (no object metadata, or a nil pointer) is left out and
// logged (WithSourceLogger).
func NewInformerSource(inf Informer, faulty func(obj any) bool, opts ...SourceOption) (*Tracker, error) {
	if inf == nil {
		return nil, errors.New("ratelimit: NewInformerSource: informer is nil")
	}
	if faulty == nil {
		return nil, errors.New("ratelimit: NewInformerSource: faulty predicate is nil")
	}
	h := informerHandler{t: NewTracker(), faulty: faulty, logger: klog.Background()}
	for _, o := range opts {
		if o != nil {
			o(&h)
		}
	}
	if h.domainsSet && h.domains == nil {
		return nil, errors.New("ratelimit: NewInformerSource: WithDomains: domains function is nil")
	}
	t := h.t
	t.noDomains = h.domains == nil
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: NewInformerSource: adding event handler: %w", err)
	}
	if reg == nil {
		return nil, fmt.Errorf("ratelimit: NewInformerSource: %T.AddEventHandler returned no registration and no error", inf)
	}
	t.hasSynced = reg.HasSynced
	return t, nil
}

// SourceOption configures NewInformerSource.
type SourceOption func(*informerHandler)

// WithDomains has NewInformerSource also record each object's disruption
// domains (Tracker.SetInDomains), typically DomainsOf(c,
// cfg.DisruptionDomain), on the informer's goroutine as faulty is. Without
// it the Tracker knows no domain, and NewLimiter refuses it under a domain
// rule.
func WithDomains(domains func(obj any) []string) SourceOption {
	return func(h *informerHandler) { h.domains, h.domainsSet = domains, true }
}

// WithSourceLogger sets where objects that cannot be keyed are logged.
// Default: klog.Background().
func WithSourceLogger(l klog.Logger) SourceOption {
	return func(h *informerHandler) { h.logger = l }
}

// informerHandler is a cache.ResourceEventHandler feeding a Tracker.
type informerHandler struct {
	t       *Tracker
	faulty  func(obj any) bool
	domains func(obj any) []string // nil: no domains
	// domainsSet: WithDomains was given, so a nil domains is an error.
	domainsSet bool
	logger     klog.Logger
}

var _ cache.ResourceEventHandler = informerHandler{}

func (h informerHandler) OnAdd(obj any, _ bool) { h.set(obj) }

func (h informerHandler) OnUpdate(_, newObj any) { h.set(newObj) }

func (h informerHandler) OnDelete(obj any) {
	key, err := keyOf(obj, cache.DeletionHandlingMetaNamespaceKeyFunc)
	if err != nil {
		h.logger.Error(err, "ratelimit: cannot key deleted object; fleet health may count it until the next relist", "type", fmt.Sprintf("%T", obj))
		return
	}
	h.t.Delete(key)
}

func (h informerHandler) set(obj any) {
	key, err := keyOf(obj, cache.MetaNamespaceKeyFunc)
	if err != nil {
		h.logger.Error(err, "ratelimit: cannot key object; it is left out of fleet health", "type", fmt.Sprintf("%T", obj))
		return
	}
	if h.domains != nil {
		h.t.SetInDomains(key, h.faulty(obj), h.domains(obj)...)
		return
	}
	h.t.Set(key, h.faulty(obj))
}

// keyOf is obj's key by f. A typed nil (a nil *Cluster in an interface)
// has none: f would panic reading its metadata.
func keyOf(obj any, f cache.KeyFunc) (string, error) {
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return "", fmt.Errorf("ratelimit: the informer delivered a nil %T", obj)
	}
	return f(obj)
}

package whatif

import (
	"os"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

func metaItems(l client.ObjectList) ([]runtime.Object, error) { return meta.ExtractList(l) }

func setItems(l client.ObjectList, items []runtime.Object) error { return meta.SetList(l, items) }

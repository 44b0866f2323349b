package reduce

import (
	"slices"

	"github.com/ahpd/ahpd/internal/ahp"
)

// Annotations applies an annotations-channel action to s. An action naming
// an annotation the state does not hold changes nothing.
func Annotations(s *ahp.AnnotationsState, a ahp.Action) {
	switch a := a.(type) {
	case ahp.AnnotationsSet:
		s.Annotations = upsert(s.Annotations, a.Annotation, func(an ahp.Annotation) bool { return an.ID == a.Annotation.ID })
	case ahp.AnnotationsUpdated:
		updateAnnotation(s, a.AnnotationID, func(an *ahp.Annotation) {
			if a.Resolved != nil {
				an.Resolved = *a.Resolved
			}
			if a.Origin != nil {
				o := *a.Origin
				an.Origin = &o
			}
			if a.TurnID != nil {
				an.TurnID = *a.TurnID
			}
			if a.Resource != nil {
				an.Resource = *a.Resource
			}
			if a.Range != nil {
				an.Range = a.Range
			}
		})
	case ahp.AnnotationsRemoved:
		if i := annotationIndex(s.Annotations, a.AnnotationID); i >= 0 {
			s.Annotations = without(s.Annotations, i)
		}
	case ahp.AnnotationsEntrySet:
		updateAnnotation(s, a.AnnotationID, func(an *ahp.Annotation) {
			an.Entries = upsert(an.Entries, a.Entry, func(e ahp.AnnotationEntry) bool { return e.ID == a.Entry.ID })
		})
	case ahp.AnnotationsEntryRemoved:
		updateAnnotation(s, a.AnnotationID, func(an *ahp.Annotation) {
			if i := slices.IndexFunc(an.Entries, func(e ahp.AnnotationEntry) bool { return e.ID == a.EntryID }); i >= 0 {
				an.Entries = without(an.Entries, i)
			}
		})
	}
}

// updateAnnotation replaces annotation id with a copy fn changed.
func updateAnnotation(s *ahp.AnnotationsState, id string, fn func(*ahp.Annotation)) {
	i := annotationIndex(s.Annotations, id)
	if i < 0 {
		return
	}
	list := fresh(s.Annotations)
	fn(&list[i])
	s.Annotations = list
}

func annotationIndex(list []ahp.Annotation, id string) int {
	return slices.IndexFunc(list, func(an ahp.Annotation) bool { return an.ID == id })
}

// ResourceWatch applies a resource-watch action to s. A change report is a
// notice of what changed under the root; the watch itself does not change.
func ResourceWatch(s *ahp.ResourceWatchState, a ahp.Action) {}

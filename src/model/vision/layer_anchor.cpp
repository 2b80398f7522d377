// Placeholder so the layer library exists before its first real source lands; remove when it does.
namespace folio { void layer_anchor_model_vision() {} }

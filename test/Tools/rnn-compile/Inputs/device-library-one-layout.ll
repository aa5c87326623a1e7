; A device library with the types this compiler calls, but the entry points
; of one layout only (the forward bf16 LSTM at H = 768), as a library built
; for fewer layouts would be: rnn-compile must name the first one missing.
define void @rnn_persistent_prefetch_l1(ptr %address) {
  ret void
}
define float @rnn_persistent_tanh(float %x) {
  ret float %x
}
define void @rnn_persistent_fwd_g4_h768_begin(ptr %u, ptr %fragments, i32 %hidden) {
  ret void
}
define void @rnn_persistent_fwd_g4_h768_stage(i32 %wait, i32 %batch, ptr %vector, ptr %counter, ptr %exchange) {
  ret void
}
define void @rnn_persistent_fwd_g4_h768_multiply(i32 %phase, i32 %batch, ptr %fragments, i32 %firstTile, i32 %tiles) {
  ret void
}
define float @rnn_persistent_fwd_g4_h768_sum(i32 %gate, i32 %row, i32 %unit) {
  ret float 0.0
}
define void @rnn_persistent_fwd_g4_h768_publish(float %value, i32 %row, i32 %unit, i32 %batch, ptr %exchange) {
  ret void
}
define void @rnn_persistent_fwd_g4_h768_release(ptr %counter, ptr %exchange, i32 %batch, i32 %step) {
  ret void
}

; A device library whose stage entry point takes the argument an older
; compiler passed (the step's phase): rnn-compile must refuse it.
define void @rnn_persistent_prefetch_l1(ptr %address) {
  ret void
}
define float @rnn_persistent_tanh(float %x) {
  ret float %x
}
define void @rnn_persistent_fwd_g4_h768_begin(ptr %u, ptr %fragments, i32 %hidden) {
  ret void
}
define void @rnn_persistent_fwd_g4_h768_stage(i32 %wait, i32 %phase, i32 %batch, ptr %vector, ptr %counter) {
  ret void
}

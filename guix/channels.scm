;;; guix/channels.scm -- the Guix revision that oclsci's environments are pinned to.
;;;
;;; Replay with:
;;;   guix time-machine -C guix/channels.scm -- shell -m guix/manifest.scm -- oclsci --help
;;;
;;; This is the format written by `guix describe -f channels'.  To move the pin:
;;;   guix pull && guix describe -f channels > guix/channels.scm
;;; then refresh guix/package-names.txt for the new commit (see docs/guix.md).
;;; The commit below is the one that guix/package-names.txt was read from.

(list (channel
        (name 'guix)
        (url "https://git.guix.gnu.org/guix.git")
        (branch "master")
        (commit
          "43770a9d8ac439cdf9dbf73a7d316d62ab177640")
        (introduction
          (make-channel-introduction
            "9edb3f66fd807b096b48283debdcddccfea34bad"
            (openpgp-fingerprint
              "BBB0 2DDF 2CEA F6A8 0D1D  E643 A2A0 6DF2 A33A 54FA")))))

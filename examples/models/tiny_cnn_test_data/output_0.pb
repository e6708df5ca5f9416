
BprobabilitiesJ(7Ъ>Dpч=⌠бл=дйт=Wэ╝=∙├╨=чw╘= ·=
°ь=▀Д=
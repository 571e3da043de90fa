# admin: the admin socket server inside mysteerd.
DAEMON_OBJS += $(BUILD)/obj/userspace/admin/admin.o

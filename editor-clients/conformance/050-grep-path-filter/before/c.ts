hello ts
